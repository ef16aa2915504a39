"""When the data is read without the network: the rule of huggingface_hub and datasets, not one of our own.

A run that believes it is online while the libraries are offline tries a download they refuse, through lmms-eval's
five retries, and ends on ``Dataset ... is not cached in None``; offline, it says in one line which release is
missing and how to get it (``lmms_spatial.data.hub_cache.offline_because``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lmms_spatial.data.hub_cache import OFFLINE_VARS, offline, offline_because

# each environment (the offline variables only), and the variables that keep the data off the network, by hand:
# huggingface_hub reads HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE when HF_HUB_OFFLINE is unset or empty; datasets reads
# HF_DATASETS_OFFLINE where set, else huggingface_hub's; a value counts when it is 1/ON/YES/TRUE in any case
CASES = [
    ({}, []),
    ({"HF_HUB_OFFLINE": "1"}, ["HF_HUB_OFFLINE"]),
    ({"HF_HUB_OFFLINE": "true"}, ["HF_HUB_OFFLINE"]),
    ({"HF_HUB_OFFLINE": "On"}, ["HF_HUB_OFFLINE"]),
    ({"HF_HUB_OFFLINE": "0"}, []),
    ({"HF_HUB_OFFLINE": "off"}, []),
    ({"TRANSFORMERS_OFFLINE": "1"}, ["TRANSFORMERS_OFFLINE"]),  # set on many clusters from transformers' old docs
    ({"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "yes"}, ["TRANSFORMERS_OFFLINE"]),
    ({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"}, []),  # HF_HUB_OFFLINE is set: it alone is read
    ({"HF_DATASETS_OFFLINE": "1"}, ["HF_DATASETS_OFFLINE"]),
    ({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "0"}, ["HF_HUB_OFFLINE"]),  # datasets downloads through the hub
    (
        {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"],
    ),  # fmt: skip
]


@pytest.mark.parametrize(("env", "because"), CASES, ids=[json.dumps(env) for env, _ in CASES])
def test_the_variables_that_keep_the_data_off_the_network(env, because):
    assert offline_because(env) == because
    assert offline(env) == bool(because)


_LIBRARIES = """
import importlib, json, os, sys
import huggingface_hub.constants as hub
import datasets.config as ds
answers = []
for env in json.loads(sys.argv[1]):
    for name in {names!r}:
        os.environ.pop(name, None)
    os.environ.update(env)
    importlib.reload(hub)  # both read the variables once, when imported
    importlib.reload(ds)
    answers.append(bool(hub.HF_HUB_OFFLINE or ds.HF_HUB_OFFLINE))
print(json.dumps(answers))
"""


def test_the_rule_is_the_one_huggingface_hub_and_datasets_follow():
    """The oracle: the libraries themselves, imported under each environment of :data:`CASES`."""
    envs = [env for env, _ in CASES]
    code = _LIBRARIES.format(names=OFFLINE_VARS)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(envs)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout) == [offline(env) for env in envs]
