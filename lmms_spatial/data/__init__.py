"""Dataset access: Hub-or-local sources, image decoding, answer spaces, demo/fixture builders."""
