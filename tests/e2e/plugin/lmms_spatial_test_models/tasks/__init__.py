"""No tasks: lmms-eval requires the folder of a plugin."""
