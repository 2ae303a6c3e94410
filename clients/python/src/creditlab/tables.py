"""Tables for the caller: a pandas DataFrame when pandas is installed, else the list of dicts itself."""

from __future__ import annotations

import csv
import io
from typing import Any, Dict, List


def table(rows: List[Dict[str, Any]]):
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def csv_table(data: bytes):
    """CSV as a DataFrame (pandas), else a list of dicts with numbers as numbers and empty cells as None."""
    try:
        import pandas as pd
    except ImportError:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
        return [{k: _cell(v) for k, v in row.items()} for row in reader]
    return pd.read_csv(io.BytesIO(data))


def _cell(text: str):
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
