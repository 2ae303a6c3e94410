"""
Creditlab's Python client: stream a group-rollout RL run's rollouts in from a background thread, and get
any estimator's step-level advantages back.

    import creditlab
    client = creditlab.Client()              # CREDITLAB_URL / CREDITLAB_API_KEY, else ~/.creditlab/credentials.json
    with client.create_run(name="run 1", env="alfworld", method="gigpo") as run:
        run.log_rollouts(0, groups)           # rollout-batch/v1 groups
        values, index = run.advantages(0, "gigpo", {"gamma": 0.95})
        run.upload_checkpoint(0, "ckpt/iter0.pt")   # streamed; run.download_checkpoint(0, dest) gets it back
"""

__version__ = "0.1.0"

from .advantages import from_document, in_row_order  # noqa: E402
from .checkpoints import Checkpoint, CheckpointDownload  # noqa: E402
from .client import Client  # noqa: E402
from .comparison import Comparison  # noqa: E402
from .errors import ApiError, ChecksumMismatch, CreditlabError, GraphQLError, InvalidInput, ServerUnavailable  # noqa: E402
from .run import Run  # noqa: E402
from .transport import RetryPolicy  # noqa: E402

__all__ = [
    "ApiError",
    "Checkpoint",
    "CheckpointDownload",
    "ChecksumMismatch",
    "Client",
    "Comparison",
    "CreditlabError",
    "GraphQLError",
    "InvalidInput",
    "RetryPolicy",
    "Run",
    "ServerUnavailable",
    "from_document",
    "in_row_order",
]
