"""The client example in docs/serve.md runs against a real server as it is written there."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"


def test_the_documented_client_runs(server):
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    scope: dict = {"__name__": "doc_example"}
    exec(compile(code, str(DOC), "exec"), scope)
    result = asyncio.run(scope["main"](server))
    assert [e["type"] for e in result["events"]] == ["speaking", "done"]
    assert result["frames"] > 25 and 1.0 < result["audio_s"] < 4.0
