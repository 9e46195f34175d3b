"""The games app's commands: `create_app`."""
