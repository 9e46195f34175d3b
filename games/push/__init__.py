"""Push notifications to phones and browsers (docs/push.md): devices, the apps' provider keys, the
notifications recorded with each change and their delivery on the push lane.

- Recording (`turns`, `events`, `invited`, `remind`; called by the services inside the change's
  transaction): one message per device of each person to tell, keyed so that a turn is one message.
- Sending (`attempt`, run by the `games.deliver_push` task on the `push` queue or by the embedded
  sweep's sender thread): after the grace, only if still true and the player is not watching the
  table; at most once (games.push.sending says how).
- Devices (games.push.devices) and credentials (games.push.credentials, encrypted at rest) are the
  API's; the providers' wire protocols are games.push.providers.
"""

from games.push.recording import events, forget, invited, remind, turns
from games.push.sending import attempt, deliver_due, sweep

QUEUE = "push"  # CELERY_TASK_ROUTES sends games.deliver_push there

__all__ = ["QUEUE", "attempt", "deliver_due", "events", "forget", "invited", "remind", "sweep", "turns"]
