"""Models of the test plugin, by lmms-eval name."""

AVAILABLE_MODELS = {"slow_guess": "SlowGuess", "until_splitter": "UntilSplitter"}
