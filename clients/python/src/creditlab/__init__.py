"""
Creditlab's Python client: stream a group-rollout RL run's rollouts in from a background thread, and get
any estimator's step-level advantages back.

    import creditlab
    client = creditlab.Client()              # CREDITLAB_URL / CREDITLAB_API_KEY, else ~/.creditlab/credentials.json
    with client.create_run(name="run 1", env="alfworld", method="gigpo") as run:
        run.log_rollouts(0, groups)           # rollout-batch/v1 groups
        values, index = run.advantages(0, "gigpo", {"gamma": 0.95})
"""

__version__ = "0.1.0"

from .advantages import from_document, in_row_order  # noqa: E402
from .client import Client  # noqa: E402
from .comparison import Comparison  # noqa: E402
from .errors import ApiError, CreditlabError, GraphQLError, InvalidInput, ServerUnavailable  # noqa: E402
from .run import Run  # noqa: E402
from .transport import RetryPolicy  # noqa: E402

__all__ = [
    "ApiError",
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
