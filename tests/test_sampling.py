"""The sampler chain: each sampler against llama.cpp's semantics (the expected values of its
tests/test-sampling.cpp where it has them), the chain order, Mirostat's state, and the exactness
design: a pure counter-based uniform per token and an inverse-CDF pick."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from kinetic.errors import KineticError
from kinetic.sampling.chain import SamplerState, pick, probabilities, sample
from kinetic.sampling.dry import NO_BREAKERS, DryBreakers, apply_dry, resolve_breakers
from kinetic.sampling.names import SETTINGS
from kinetic.sampling.settings import RANDOM_SEED, SamplingSettings, resolve_settings, with_fresh_seed
from kinetic.sampling.uniform import PICK_STREAM, XTC_STREAM, uniform

# every sampler off, temperature 1: what the tests switch one sampler on against
NEUTRAL = SamplingSettings(temp=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=7)


def chain(probs, history=(), state=None, index=0, **settings):
    """The chain's distribution for logits log(probs), with only the given settings on."""
    chosen = dataclasses.replace(NEUTRAL, **settings)
    logits = np.log(np.array(probs, dtype=np.float32))
    return probabilities(logits, list(history), chosen, index, state or SamplerState.start(chosen))


def expect(actual, expected, tol=1e-6):
    """Same survivors (exact zeros) and the same probabilities."""
    expected = np.array(expected, dtype=np.float64)
    assert np.array_equal(actual == 0.0, expected == 0.0), actual
    np.testing.assert_allclose(actual, expected, atol=tol)


def close(actual, expected, tol=1e-6):
    """The same probabilities, for samplers that lower tokens without dropping them."""
    np.testing.assert_allclose(actual, np.array(expected, dtype=np.float64), atol=tol)


# --- the uniform stream and the pick ---


def test_uniform_is_a_pure_function_of_seed_index_and_stream():
    first = uniform(42, 5)
    for index in range(100):
        uniform(42, index)
    assert uniform(42, 5) == first  # no state: earlier draws change nothing
    assert uniform(42, 5, PICK_STREAM) == first
    assert uniform(42, 5, XTC_STREAM) != first
    assert uniform(43, 5) != first
    draws = [uniform(1, i) for i in range(10_000)]
    assert all(0.0 <= u < 1.0 for u in draws)
    assert len(set(draws)) == len(draws)
    assert abs(np.mean(draws) - 0.5) < 0.01


def test_pick_is_the_inverse_cdf_over_ascending_ids():
    probs = np.array([0.0, 0.25, 0.0, 0.75])
    assert pick(probs, 0.0) == 1
    assert pick(probs, 0.2499) == 1
    assert pick(probs, 0.25) == 3  # the running sum must pass u
    assert pick(probs, 1.0 - 2**-53) == 3
    assert pick(probs * 3.0, 0.2) == 1  # unnormalized weights work the same
    with pytest.raises(ValueError):
        pick(np.zeros(4), 0.5)


def test_pick_draws_tokens_with_their_probabilities():
    probs = np.array([0.05, 0.0, 0.4, 0.15, 0.3, 0.1])
    draws = 10_000
    counts = np.bincount([pick(probs, uniform(2024, i)) for i in range(draws)], minlength=probs.size)
    assert counts[1] == 0
    expected = probs[probs > 0] * draws
    chi_square = np.sum((counts[probs > 0] - expected) ** 2 / expected)
    assert chi_square < 18.47  # 4 degrees of freedom, p = 0.001


# --- greedy ---


def test_greedy_takes_the_likeliest_token_with_ties_to_the_lowest_id():
    logits = np.array([1.0, 3.0, 3.0, 2.0], dtype=np.float32)
    settings = dataclasses.replace(NEUTRAL, temp=0.0, seed=RANDOM_SEED)  # greedy needs no seed
    expect(probabilities(logits, [], settings, 0, SamplerState.start(settings)), [0, 1, 0, 0])
    assert sample(logits, [], settings, 0, SamplerState.start(settings)) == 1
    assert sample(logits, [], dataclasses.replace(settings, temp=-1.0), 0, SamplerState.start(settings)) == 1


def test_greedy_picks_among_the_survivors_of_the_chain():
    # XTC drops the two likeliest, so greedy takes the third, as llama.cpp's temp 0 after XTC does
    probs = chain([0.4, 0.3, 0.2, 0.1], temp=0.0, xtc_probability=1.0, xtc_threshold=0.25)
    expect(probs, [0, 1, 0, 0])



@pytest.mark.parametrize("settings", [
    dict(top_k=1), dict(top_k=40, top_p=0.95, min_p=0.05), dict(top_p=0.01), dict(min_p=0.9), dict(top_n_sigma=0.5),
    dict(top_k=2, repeat_penalty=1.3, frequency_penalty=0.5), dict(dry_multiplier=0.8, dry_allowed_length=1),
    dict(logit_bias={3: 5.0, 9: float("-inf")}), dict(typical_p=0.3, top_k=5),
    dict(xtc_probability=1.0, xtc_threshold=0.05, top_k=6)])
def test_greedy_sample_is_the_argmax_of_the_whole_chain(settings):
    # sample skips the filters that keep the likeliest token: it must still pick what the chain leaves
    rng = np.random.default_rng(5)
    chosen = dataclasses.replace(NEUTRAL, temp=0.0, **settings)
    for trial in range(50):
        logits = rng.integers(-4, 5, 64).astype(np.float32) / 2  # many ties, at the top too
        specials = [np.nan, -np.inf][: trial % 3]  # the chain drops a NaN
        logits[rng.integers(0, 64, len(specials))] = specials
        history = list(rng.integers(0, 64, 20))
        state = SamplerState.start(chosen)
        expected = int(np.argmax(probabilities(logits, history, chosen, trial, state)))
        assert sample(logits, history, chosen, trial, state) == expected


# --- each sampler ---


def test_temperature_scales_the_logits():
    expect(chain([0.1, 0.2, 0.3, 0.4]), [0.1, 0.2, 0.3, 0.4])
    weights = np.array([0.1, 0.2, 0.3, 0.4]) ** 2
    expect(chain([0.1, 0.2, 0.3, 0.4], temp=0.5), weights / weights.sum())


def test_top_k():
    expect(chain([0.1, 0.2, 0.3, 0.4], top_k=1), [0, 0, 0, 1])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_k=3), [0, 2 / 9, 3 / 9, 4 / 9])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_k=4), [0.1, 0.2, 0.3, 0.4])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_k=0), [0.1, 0.2, 0.3, 0.4])
    expect(chain([0.1, 0.3, 0.3, 0.3], top_k=2), [0, 0.5, 0.5, 0])  # ties go to the lower ids


def test_top_k_on_a_large_vocabulary_keeps_exactly_the_best():
    logits = np.random.default_rng(3).standard_normal(200_000).astype(np.float32)
    logits[[10, 20, 30]] = 9.0  # a tie at the top
    settings = dataclasses.replace(NEUTRAL, top_k=40)
    probs = probabilities(logits, [], settings, 0, SamplerState.start(settings))
    assert set(np.flatnonzero(probs)) == set(np.argsort(-logits, kind="stable")[:40])


def test_top_p():
    expect(chain([0.1, 0.2, 0.3, 0.4], top_p=0.0), [0, 0, 0, 1])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_p=0.7), [0, 0, 3 / 7, 4 / 7])  # 0.4 + 0.3 reaches 0.7
    expect(chain([0.1, 0.2, 0.3, 0.4], top_p=0.8), [0, 2 / 9, 3 / 9, 4 / 9])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_p=1.0), [0.1, 0.2, 0.3, 0.4])
    expect(chain([0.3, 0.3, 0.3, 0.1], top_p=0.5), [0.5, 0.5, 0, 0])  # ties go to the lower ids


def test_top_p_beyond_the_first_look_sorts_more():
    probs = np.full(2000, 1 / 2000)
    probs[:1000] *= 1.5
    probs[1000:] *= 0.5
    kept = chain(probs, top_p=0.8123)  # 0.75 from the first 1000, then 250 more of 0.00025
    assert np.count_nonzero(kept) == 1250  # more than the 256 looked at first
    assert np.all(kept[:1250] > 0)


def test_min_p_is_relative_to_the_best_token():
    base = [0.1, 0.2, 0.3, 0.4]
    expect(chain(base, min_p=0.24), base)
    expect(chain(base, min_p=0.26), [0, 2 / 9, 3 / 9, 4 / 9])
    expect(chain(base, min_p=0.51), [0, 0, 3 / 7, 4 / 7])
    expect(chain(base, min_p=0.76), [0, 0, 0, 1])
    expect(chain(base, min_p=1.05), [0, 0, 0, 1])  # the best token always stays


def test_typical_keeps_the_tokens_closest_to_the_entropy():
    expect(chain([0.97, 0.01, 0.01, 0.01], typical_p=0.5), [1, 0, 0, 0])
    expect(chain([0.4, 0.2, 0.2, 0.2], typical_p=0.5), [0, 1 / 3, 1 / 3, 1 / 3])
    expect(chain([0.4, 0.2, 0.2, 0.2], typical_p=1.0), [0.4, 0.2, 0.2, 0.2])


def test_top_n_sigma():
    expect(chain([0.1, 0.2, 0.3, 0.4], top_n_sigma=1.0), [0, 0, 3 / 7, 4 / 7])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_n_sigma=0.0), [0.1, 0.2, 0.3, 0.4])  # 0 is off, as in llama.cpp
    expect(chain([0.1, 0.2, 0.3, 0.4], top_n_sigma=3.0), [0.1, 0.2, 0.3, 0.4])


def test_xtc_with_probability_one_drops_all_top_choices_but_the_least_likely():
    base = [0.4, 0.3, 0.2, 0.1]
    expect(chain(base, xtc_probability=1.0, xtc_threshold=0.09), [0, 0, 0, 1])
    expect(chain(base, xtc_probability=1.0, xtc_threshold=0.19), [0, 0, 2 / 3, 1 / 3])
    expect(chain(base, xtc_probability=1.0, xtc_threshold=0.29), [0, 0.5, 1 / 3, 1 / 6])
    expect(chain(base, xtc_probability=1.0, xtc_threshold=0.39), base)  # only one token above
    expect(chain(base, xtc_probability=1.0, xtc_threshold=0.6), base)  # a threshold above 0.5 is off


def test_xtc_coin_is_the_tokens_own_uniform_on_its_stream():
    base = [0.4, 0.3, 0.2, 0.1]
    for index in range(40):
        acted = chain(base, index=index, xtc_probability=0.5, xtc_threshold=0.19)[0] == 0.0
        assert acted == (uniform(NEUTRAL.seed, index, XTC_STREAM) <= 0.5)


def test_repeat_penalty_over_the_history():
    flat = [0.2] * 5
    close(chain(flat, [0], repeat_penalty=50.0, repeat_last_n=1), [0, 0.25, 0.25, 0.25, 0.25])
    close(chain(flat, [0, 1, 2], repeat_penalty=50.0, repeat_last_n=3), [0, 0, 0, 0.5, 0.5])
    close(chain(flat, [0, 1, 2, 0, 0], repeat_penalty=50.0, repeat_last_n=5), [0, 0, 0, 0.5, 0.5])
    # a positive logit is divided, a negative one multiplied
    logits = np.array([2.0, -2.0, 0.0], dtype=np.float32)
    settings = dataclasses.replace(NEUTRAL, repeat_penalty=2.0)
    probs = probabilities(logits, [0, 1], settings, 0, SamplerState.start(settings))
    np.testing.assert_allclose(np.log(probs / probs[2]), [1.0, -4.0, 0.0], atol=1e-12)


def test_frequency_and_presence_penalties():
    flat = [0.2] * 5
    penalties = dict(frequency_penalty=5.0, presence_penalty=5.0)
    close(chain(flat, [0], repeat_last_n=1, **penalties), [0.000011, 0.249997, 0.249997, 0.249997, 0.249997])
    close(chain(flat, [0, 1, 2, 0, 0], repeat_last_n=5, **penalties), [0.0, 0.000023, 0.000023, 0.499977, 0.499977])


def test_penalties_look_only_at_the_last_n_tokens():
    flat = [0.25] * 4
    penalties = dict(repeat_penalty=50.0)
    close(chain(flat, [0, 1, 2], repeat_last_n=1, **penalties), [1 / 3, 1 / 3, 0, 1 / 3])
    close(chain(flat, [0, 1, 2], repeat_last_n=0, **penalties), flat)
    close(chain(flat, [0, 1, 2], repeat_last_n=-1, **penalties), [0, 0, 0, 1])


def dry(probs, history, breakers=(), **settings):
    state = SamplerState(mirostat_mu=10.0, dry_breakers=DryBreakers.from_tails(dict(breakers)))
    return chain(probs, history, state, dry_multiplier=settings.pop("multiplier", 1.0), **settings)


def test_dry_penalizes_a_token_that_extends_a_repeat():
    quarter, fifth = [0.25] * 4, [0.2] * 5
    close(dry(quarter, [0, 1], dry_base=1.1, dry_penalty_last_n=4), quarter)
    # "0 1" was followed by 2 before: 2 loses 1.0 * 1.1 ** (2 - 2)
    close(dry(quarter, [0, 1, 2, 0, 1], dry_base=1.1, dry_penalty_last_n=5), [0.296923, 0.296923, 0.109232, 0.296923])
    close(dry(fifth, [0, 1, 2, 0, 1], multiplier=2.0, dry_base=1.1, dry_penalty_last_n=5),
           [0.241818, 0.241818, 0.032727, 0.241818, 0.241818])
    # a repeat of 2 is within an allowed length of 4
    close(dry(fifth, [0, 1, 2, 3, 4, 0, 1], dry_base=1.1, dry_allowed_length=4, dry_penalty_last_n=7), fifth)


def test_dry_penalty_grows_with_the_repeat_length():
    history = [5, 0, 1, 2, 3, 4, 0, 1, 2, 3]  # "0 1 2 3" repeats; 4 would extend it to 5 tokens
    probs = dry([1 / 6] * 6, history, dry_base=2.0, dry_allowed_length=2, dry_penalty_last_n=-1)
    np.testing.assert_allclose(np.log(probs[5] / probs[4]), 1.0 * 2.0 ** (4 - 2))
    assert probs[0] == probs[5]


def test_dry_sequence_breakers_end_a_repeat():
    fifth = [0.2] * 5
    # the breaker 3 sits between the repeat and its end, and 3 itself is never penalized
    close(dry(fifth, [0, 1, 3, 4, 0, 1], {3: [()]}, dry_base=1.1, dry_penalty_last_n=6), fifth)
    # a two-token breaker "3 4" breaks only when complete
    history = [0, 1, 2, 3, 0, 1]
    penalized = dry(fifth, history, {3: [(4,)]}, dry_base=1.1, dry_penalty_last_n=6)
    assert penalized[2] < penalized[0]
    # "0 1 2 3 4 0 1" repeats, but after the last "3 4" only "0 1" counts: 2 loses 1.1 ** 0, not 1.1 ** 5
    history = [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]
    limited = dry(fifth, history, {3: [(4,)]}, dry_base=1.1, dry_penalty_last_n=-1)
    np.testing.assert_allclose(np.log(limited[0] / limited[2]), 1.0)
    unlimited = dry(fifth, history, dry_base=1.1, dry_penalty_last_n=-1)
    np.testing.assert_allclose(np.log(unlimited[0] / unlimited[2]), 1.1**5)


def test_dry_matches_its_definition_on_random_histories():
    """Each token following an earlier occurrence of the history's last tokens loses
    multiplier * base ** (longest such repeat - allowed length), counted by brute force."""
    rng = np.random.default_rng(8)
    for _ in range(50):
        history = rng.integers(0, 3, size=int(rng.integers(3, 40))).tolist()
        longest = {}
        for end in range(len(history) - 1):
            length = 0
            while length <= end and history[end - length] == history[-1 - length]:
                length += 1
            if length >= 2:
                follower = history[end + 1]
                longest[follower] = max(longest.get(follower, 0), length)
        expected = np.zeros(3)
        for token, length in longest.items():
            expected[token] = -0.5 * 1.5 ** (length - 2)
        scores = np.zeros(3)
        apply_dry(scores, history, 0.5, 1.5, 2, -1, NO_BREAKERS)
        np.testing.assert_allclose(scores, expected)


class FakeVocabulary:
    """Token texts, and an encoder that knows one token per character."""

    def __init__(self, texts):
        self.texts = texts
        self.n_vocab = len(texts)

    def token_bytes(self, token, special=True):
        return self.texts[token].encode()

    def encode(self, text, add_special=True, parse_special=False):
        return [self.texts.index(char) for char in text]


def test_resolving_breakers_finds_containing_tokens_and_partial_overlaps():
    vocab = FakeVocabulary(["a", "b", "x\n", ":", "ab", "zza", "\n"])
    breakers = resolve_breakers(["\n", "ab:", ""], vocab)
    assert dict(breakers.tails) == {
        2: ((),),  # contains "\n": breaks alone
        6: ((),),
        0: ((1, 3),),  # ends in "a": breaks when "b" ":" follow
        5: ((1, 3),),
        4: ((3,),),  # ends in "ab": breaks when ":" follows
    }
    assert list(breakers.lone_heads) == [2, 6]


def test_logit_bias_adds_and_bans():
    base = [0.25] * 4
    expect(chain(base, logit_bias={0: -math.inf}), [0, 1 / 3, 1 / 3, 1 / 3])
    boosted = chain(base, logit_bias={1: math.log(2.0), 99: 5.0})  # ids outside the vocabulary are ignored
    expect(boosted, [0.2, 0.4, 0.2, 0.2])
    with pytest.raises(KineticError):
        chain(base, logit_bias={token: -math.inf for token in range(4)})


# --- the chain ---


def test_logit_bias_comes_before_the_repeat_penalty():
    logits = np.array([2.0, 0.0], dtype=np.float32)
    settings = dataclasses.replace(NEUTRAL, logit_bias={0: 2.0}, repeat_penalty=2.0)
    probs = probabilities(logits, [0], settings, 0, SamplerState.start(settings))
    np.testing.assert_allclose(np.log(probs[0] / probs[1]), (2.0 + 2.0) / 2.0)


def test_penalties_come_before_top_k():
    expect(chain([0.1, 0.2, 0.3, 0.4], [3], repeat_penalty=50.0, top_k=1), [0, 0, 1, 0])


def test_top_n_sigma_comes_before_top_k_and_top_k_before_top_p():
    # top-p on what top-k left: 0.3 / 0.7 alone does not reach 0.6, so both stay
    expect(chain([0.1, 0.2, 0.3, 0.4], top_k=2, top_p=0.6), [0, 0, 3 / 7, 4 / 7])
    expect(chain([0.1, 0.2, 0.3, 0.4], top_n_sigma=1.0, top_k=3), [0, 0, 3 / 7, 4 / 7])


def test_min_p_sees_what_top_p_left_and_temperature_comes_last():
    # min-p compares untempered probabilities: 0.2 is half of 0.4, whatever the temperature
    tempered = np.array([0.2, 0.3, 0.4]) ** (1 / 3.0)
    expect(chain([0.1, 0.2, 0.3, 0.4], min_p=0.45, temp=3.0), [0, *(tempered / tempered.sum())])
    # XTC comes after min-p: min-p leaves 0.3 and 0.4, renormalized 3/7 and 4/7, and XTC drops 0.4
    expect(chain([0.1, 0.2, 0.3, 0.4], min_p=0.6, xtc_probability=1.0, xtc_threshold=0.4), [0, 0, 1, 0])


def test_mirostat_skips_penalties_and_filters():
    base = [0.1, 0.2, 0.3, 0.4]
    settings = dict(mirostat=2, mirostat_tau=5.0, top_k=1, repeat_penalty=50.0)
    expect(chain(base, [3], **settings), base)  # mu = 10: every token's surprise is below it
    expect(chain(base, [3], logit_bias={0: -math.inf}, **settings), [0, 2 / 9, 3 / 9, 4 / 9])  # bias stays
    squared = np.array(base) ** 2
    expect(chain(base, temp=0.5, **settings), squared / squared.sum())  # temperature comes first


def zipf(n, exponent):
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    return weights / weights.sum()


def test_mirostat_1_keeps_the_top_k_its_zipf_estimate_gives():
    n, s, mu = 1000, 1.5, 9.0
    probs = zipf(n, s)
    k = ((s - 1) * 2**mu / (1 - n ** -(s - 1))) ** (1 / s)  # Basu et al.'s k for an exact Zipf law
    kept = chain(probs, mirostat=1, state=SamplerState(mirostat_mu=mu))
    assert np.count_nonzero(kept) == int(k) == 41
    expect(kept[:41], probs[:41] / probs[:41].sum())


def test_mirostat_2_keeps_tokens_with_surprise_up_to_mu():
    probs = [0.5, 0.25, 0.125, 0.0625, 0.0625]  # surprises 1, 2, 3, 4, 4 bits
    expect(chain(probs, mirostat=2, state=SamplerState(mirostat_mu=3.5)), [4 / 7, 2 / 7, 1 / 7, 0, 0])
    expect(chain(probs, mirostat=2, state=SamplerState(mirostat_mu=0.5)), [1, 0, 0, 0, 0])  # at least one


@pytest.mark.parametrize("version", [1, 2])
def test_mirostat_updates_mu_by_the_surprise_of_the_chosen_token(version):
    settings = dataclasses.replace(NEUTRAL, mirostat=version, mirostat_tau=3.0, mirostat_eta=0.1)
    state = SamplerState.start(settings)
    assert state.mirostat_mu == 6.0  # llama.cpp starts at 2 * tau
    logits = np.log(zipf(50, 1.2)).astype(np.float32)
    mu = state.mirostat_mu
    for index in range(5):
        probs = probabilities(logits, [], settings, index, dataclasses.replace(state))
        token = sample(logits, [], settings, index, state)
        mu = mu - 0.1 * (-math.log2(probs[token]) - 3.0)
        assert state.mirostat_mu == pytest.approx(mu, abs=1e-12)
    assert state.mirostat_mu != 6.0


def test_greedy_mirostat_takes_the_best_and_moves_mu_by_zero_surprise():
    settings = dataclasses.replace(NEUTRAL, temp=0.0, mirostat=2, mirostat_tau=5.0, mirostat_eta=0.1)
    state = SamplerState.start(settings)
    assert sample(np.array([0.0, 2.0, 2.0], dtype=np.float32), [], settings, 0, state) == 1
    assert state.mirostat_mu == pytest.approx(10.0 + 0.1 * 5.0)


# --- determinism ---


def generate(settings, steps=30, n_vocab=64):
    """A toy model: logits depend on the last token; returns the sampled tokens."""
    table = np.random.default_rng(11).standard_normal((n_vocab, n_vocab)).astype(np.float32) * 2
    history, state = [0], SamplerState.start(settings)
    for index in range(steps):
        history.append(sample(table[history[-1]], history, settings, index, state))
    return history[1:]


def test_same_seed_same_tokens_different_seeds_differ():
    settings = SamplingSettings(seed=1234, top_k=0, top_p=1.0, min_p=0.0, temp=1.5)
    assert generate(settings) == generate(settings)
    assert generate(settings) != generate(dataclasses.replace(settings, seed=4321))
    mirostat = dataclasses.replace(settings, mirostat=2)
    assert generate(mirostat) == generate(mirostat)


def test_a_token_depends_only_on_its_own_index_not_on_earlier_draws():
    settings = dataclasses.replace(NEUTRAL, temp=2.0)
    logits = np.random.default_rng(5).standard_normal(100).astype(np.float32)
    alone = sample(logits, [], settings, 17, SamplerState.start(settings))
    state = SamplerState.start(settings)
    for index in range(17):
        sample(logits, [], settings, index, state)
    assert sample(logits, [], settings, 17, state) == alone
    assert alone == pick(probabilities(logits, [], settings, 17, state), uniform(settings.seed, 17))


def test_sampling_needs_a_concrete_seed():
    settings = dataclasses.replace(NEUTRAL, seed=RANDOM_SEED)
    with pytest.raises(ValueError, match="seed"):
        sample(np.zeros(4, dtype=np.float32), [], settings, 0, SamplerState.start(settings))
    fresh = with_fresh_seed(settings)
    assert fresh.has_seed and with_fresh_seed(fresh) is fresh
    assert not dataclasses.replace(settings, seed=-1).has_seed


# --- settings ---


def test_defaults_are_llama_cpps():
    settings = SamplingSettings()
    assert (settings.temp, settings.top_k, settings.top_p, settings.min_p) == (0.8, 40, 0.95, 0.05)
    assert (settings.repeat_penalty, settings.repeat_last_n, settings.typical_p) == (1.0, 64, 1.0)
    assert (settings.dry_multiplier, settings.dry_base, settings.dry_allowed_length) == (0.0, 1.75, 2)
    assert settings.dry_sequence_breakers == ("\n", ":", '"', "*")
    assert (settings.xtc_probability, settings.xtc_threshold, settings.top_n_sigma) == (0.0, 0.1, -1.0)
    assert (settings.mirostat, settings.mirostat_tau, settings.mirostat_eta) == (0, 5.0, 0.1)


def test_model_file_defaults_come_between_llama_cpps_and_the_users():
    metadata = {
        "general.sampling.temp": 0.6,
        "general.sampling.top_k": 20,
        "general.sampling.top_p": "0.9",  # llama.cpp reads every value as text
        "general.sampling.min_p": "none",  # not a number: ignored
        "general.sampling.penalty_repeat": 1.1,
        "general.sampling.penalty_last_n": 128.7,
        "general.sampling.mirostat": 2,
        "general.name": "x",
    }
    settings = resolve_settings(metadata, {"temp": 1.0, "seed": 5})
    assert (settings.temp, settings.top_k, settings.top_p, settings.min_p) == (1.0, 20, 0.9, 0.05)
    assert (settings.repeat_penalty, settings.repeat_last_n, settings.mirostat, settings.seed) == (1.1, 128, 2, 5)
    assert resolve_settings({}) == SamplingSettings()
    with pytest.raises(ValueError):
        SamplingSettings(mirostat=3)


def _example(setting) -> object:
    """A value inside the setting's range that is not its default."""
    if setting.kind is list:
        return ["@@"]
    if setting.field == "mirostat":
        return 2
    return setting.kind(1 if setting.low <= 1 <= setting.high else setting.low)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.field)
def test_each_setting_reaches_its_field_by_all_three_names(setting):
    """The flag, the request field and the GGUF key of one row of the table all set the same field."""
    from kinetic.cli.options import GENERATION, sampling_overrides as cli_overrides
    from kinetic.server.fields import Fields
    from kinetic.server.sampling import sampling_overrides as request_overrides

    value = _example(setting)
    want = SamplingSettings(**{setting.field: value})
    assert setting.field in {f.name for f in dataclasses.fields(SamplingSettings)}
    for name in setting.request:
        got = request_overrides(Fields({name: value}), SimpleNamespace(n_vocab=10))  # a tokenizer, for logit_bias
        assert list(got) == [setting.field] and SamplingSettings(**got) == want, name
    if setting.gguf:
        assert resolve_settings({f"general.sampling.{setting.gguf}": value}) == want
    (param,) = [p for p in GENERATION if p.name == setting.field]
    assert param.default.param_decls == setting.flags
    options = {p.name: None for p in GENERATION} | {setting.field: value}
    assert SamplingSettings(**cli_overrides(options)) == want
