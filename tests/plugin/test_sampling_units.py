"""Sampled answers' keys (lmms_spatial.plugin.sampling): what makes a sampled answer its own in the store."""

from __future__ import annotations

from types import SimpleNamespace

from lmms_eval.caching import response_cache as rc

from lmms_spatial.plugin import sampling

IS_DETERMINISTIC = getattr(rc.is_deterministic, "__wrapped__", rc.is_deterministic)


def _request(gen_kwargs: dict, metadata: dict | None = None):
    return SimpleNamespace(args=("question", gen_kwargs, None, 0, "t", "test"), request_type="generate_until",
                           metadata=metadata or {})  # fmt: skip


def test_only_a_request_lmms_eval_skips_for_sampling_alone_is_kept():
    assert sampling.keepable(IS_DETERMINISTIC, "generate_until", {"do_sample": True, "temperature": 0.9})
    assert sampling.keepable(IS_DETERMINISTIC, "generate_until", {"temperature": 0.2})  # temperature alone samples
    assert not sampling.keepable(IS_DETERMINISTIC, "generate_until", {"max_new_tokens": 8})  # greedy: lmms-eval keeps
    assert not sampling.keepable(IS_DETERMINISTIC, "generate_until", {"do_sample": True, "n": 4})  # several answers
    assert not sampling.keepable(IS_DETERMINISTIC, "loglikelihood", {"do_sample": True})  # always deterministic


def test_each_repeat_of_one_request_is_a_draw_of_its_own():
    one, other = _request({"do_sample": True}), _request({"do_sample": True})
    drawn = sampling.with_draws([one, one, other, one])
    assert drawn[0] is one and drawn[2] is other  # a first draw is the request itself
    assert [getattr(r, "metadata", {}).get(sampling.DRAW, 0) for r in drawn] == [0, 1, 0, 2]
    assert drawn[1].args is one.args and one.metadata == {}  # copies: the request lmms-eval holds is unchanged


def test_a_sampled_requests_key_holds_the_seed_that_reaches_it_and_its_draw(monkeypatch):
    extract = sampling.extract_gen_kwargs(lambda instance: instance.args[1], IS_DETERMINISTIC)
    deterministic = sampling.is_deterministic_wrapper(IS_DETERMINISTIC)
    monkeypatch.setattr(sampling, "_seed", lambda: "torch=5")
    sampled = extract(_request({"do_sample": True, "temperature": 0.9}, {sampling.DRAW: 2}))
    assert sampled == {"do_sample": True, "temperature": 0.9, sampling.KEY: {"seed": "torch=5", "draw": 2}}
    assert deterministic("generate_until", sampled)  # kept
    assert extract(_request({"max_new_tokens": 8})) == {"max_new_tokens": 8}  # a greedy key is lmms-eval's own
    monkeypatch.setattr(sampling, "_seed", lambda: None)  # no run of ours: lmms-eval's behaviour
    assert extract(_request({"do_sample": True})) == {"do_sample": True}
    assert not deterministic("generate_until", {"do_sample": True})


def test_the_seed_of_a_sampled_answer_is_the_models_own_and_lmms_evals_torch_seed():
    assert sampling.seed_text({"model_args": "pretrained=x,seed=3", "torch_random_seed": 1234}) == "model=3,torch=1234"
    assert sampling.seed_text({"model_args": "pretrained=x", "torch_random_seed": 8}) == "torch=8"
    assert sampling.seed_text({"model_args": "", "torch_random_seed": None}) == "torch=unseeded"
