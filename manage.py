#!/usr/bin/env python
"""Django's command-line entry point for migrations, the dev server and admin tasks."""

import os
import sys


def main() -> None:
    """Run a management command with the project settings unless the caller chose others."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
