"""The replayable attack suite (issue 10): a real ``recuerdo serve`` attacked as a hostile client
and a hostile web page would, plus the CLI as a subprocess."""
