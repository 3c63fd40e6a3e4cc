"""Full factorial ANOVA (Jain ch. 20-22): the real Bonnie data set, hand-checked small cases, checks."""

import math

import numpy as np
import pandas as pd
import pytest
from fsmeter.errors import UserError
from fsmeter.stats.analyze import analyze_frame, load_csv, stack_responses
from fsmeter.stats.anova import factorial_anova
from fsmeter.stats.summary import summarize
from repo_paths import DATA
from scipy import stats as sps

BONNIE = DATA / "bonnie-1024mb-10runs.csv"
SETUPS = ["ext2/2.3.0", "ext2/2.4.17", "ext3/2.4.17", "reiserfs/2.4.17"]
MODES = ["block read", "block write"]

# Cell means the data implies, MB/s = (sum of the 10 runs' KB/s) / 10 / 1024.
# Worked for ext2/2.3.0 block write: 8828 + 8854 + 8891 + 8806 + 8866 + 8839 + 8869
# + 8862 + 8907 + 8853 = 88575 KB/s -> 8857.5 KB/s -> 8.649902 MB/s.
CELL_SUMS_KBS = {
    ("ext2/2.3.0", "block read"): 132024,
    ("ext2/2.3.0", "block write"): 88575,
    ("ext2/2.4.17", "block read"): 134570,
    ("ext2/2.4.17", "block write"): 120389,
    ("ext3/2.4.17", "block read"): 127234,
    ("ext3/2.4.17", "block write"): 118598,
    ("reiserfs/2.4.17", "block read"): 127114,
    ("reiserfs/2.4.17", "block write"): 100358,
}


@pytest.fixture(scope="module")
def bonnie_long() -> pd.DataFrame:
    """One row per run x access mode, MB/s, factors setup (filesystem + kernel) and mode."""
    wide = pd.read_csv(BONNIE)
    wide["setup"] = wide["filesystem"] + "/" + wide["kernel"].astype(str)
    long = wide.melt(
        id_vars=["setup", "run"], value_vars=["block_read_kbs", "block_write_kbs"], var_name="mode", value_name="kbs"
    )
    long["mode"] = long["mode"].map({"block_read_kbs": "block read", "block_write_kbs": "block write"})
    long["mb_s"] = long["kbs"] / 1024
    return long


def test_bonnie_cell_means(bonnie_long):
    a = analyze_frame(bonnie_long, "mb_s", ["setup", "mode"], level=0.99)
    got = {(c.levels["setup"], c.levels["mode"]): c.summary.mean for c in a.cells}
    assert set(got) == set(CELL_SUMS_KBS)
    for key, total in CELL_SUMS_KBS.items():
        assert got[key] == pytest.approx(total / 10 / 1024, abs=1e-9)
    assert got[("ext2/2.3.0", "block write")] == pytest.approx(8.649902, abs=1e-6)
    assert all(c.summary.n == 10 for c in a.cells)


def test_bonnie_one_cell_by_hand(bonnie_long):
    # ext2/2.3.0 block write, KB/s: mean 8857.5; deviations -29.5 -3.5 33.5 -51.5 8.5 -18.5 11.5
    # 4.5 49.5 -4.5; squares sum 7694.5; s^2 = 7694.5 / 9 = 854.944; s = 29.2394 KB/s.
    # 99% CI: t_{0.995; 9} = 3.250 (Jain Table A.4); half-width = 3.250 * 29.2394 / sqrt(10)
    # = 30.050 KB/s. In MB/s divide everything by 1024.
    cell = bonnie_long[(bonnie_long.setup == "ext2/2.3.0") & (bonnie_long["mode"] == "block write")]
    s = summarize(cell["mb_s"], level=0.99)
    assert s.mean == pytest.approx(8857.5 / 1024)
    assert s.stddev == pytest.approx(29.2394 / 1024, rel=1e-5)
    assert s.cov == pytest.approx(29.2394 / 8857.5, rel=1e-5)
    assert s.ci.half_width == pytest.approx(30.050 / 1024, rel=2e-4)
    assert (s.min, s.max) == pytest.approx((8806 / 1024, 8907 / 1024))
    assert s.max_min_ratio == pytest.approx(8907 / 8806)
    # Median: sorted 8806 8828 8839 8853 8854 | 8862 8866 8869 8891 8907 -> (8854 + 8862) / 2 = 8858.
    assert s.median == pytest.approx(8858 / 1024)


def jain_two_factor_ss(y: np.ndarray) -> dict[str, float]:
    """Jain ch. 22 by hand: y[i, j, k] for level i of A, j of B, replication k (plain numpy sums)."""
    a, b, r = y.shape
    cell = y.mean(axis=2)  # ybar_ij.
    mu = cell.mean()
    alpha = cell.mean(axis=1) - mu  # ybar_i.. - mu
    beta = cell.mean(axis=0) - mu  # ybar_.j. - mu
    gamma = cell - mu - alpha[:, None] - beta[None, :]
    ssy = float(np.sum(y**2))
    ss0 = a * b * r * mu**2
    ssa = b * r * float(np.sum(alpha**2))
    ssb = a * r * float(np.sum(beta**2))
    ssab = r * float(np.sum(gamma**2))
    sse = ssy - ss0 - ssa - ssb - ssab
    return {
        "SSA": ssa,
        "SSB": ssb,
        "SSAB": ssab,
        "SSE": sse,
        "SST": ssy - ss0,
        "mu": mu,
        "alpha": alpha,
        "beta": beta,
        "gamma": gamma,
    }


def test_bonnie_two_factor_anova_against_jain(bonnie_long):
    y = np.array(
        [
            [
                bonnie_long[(bonnie_long.setup == s) & (bonnie_long["mode"] == m)].sort_values("run")["mb_s"].to_numpy()
                for m in MODES
            ]
            for s in SETUPS
        ]
    )
    assert y.shape == (4, 2, 10)
    hand = jain_two_factor_ss(y)
    res = factorial_anova(bonnie_long, "mb_s", ["setup", "mode"], level=0.95)
    tab = res.table_frame()
    assert tab.loc["setup", "ss"] == pytest.approx(hand["SSA"], rel=1e-9)
    assert tab.loc["mode", "ss"] == pytest.approx(hand["SSB"], rel=1e-9)
    assert tab.loc["setup:mode", "ss"] == pytest.approx(hand["SSAB"], rel=1e-9)
    assert tab.loc["error", "ss"] == pytest.approx(hand["SSE"], rel=1e-7)
    assert tab.loc["total", "ss"] == pytest.approx(hand["SST"], rel=1e-9)
    assert list(tab["df"]) == [3, 1, 3, 72, 79]
    # % of variation (Jain: SS / SST); mode dominates, then setup, then the interaction.
    for term, key in (("setup", "SSA"), ("mode", "SSB"), ("setup:mode", "SSAB")):
        assert tab.loc[term, "pct_variation"] == pytest.approx(100 * hand[key] / hand["SST"])
    assert tab.loc["mode", "pct_variation"] == pytest.approx(59.03, abs=0.01)
    assert tab.loc["setup", "pct_variation"] == pytest.approx(20.74, abs=0.01)
    assert tab.loc["setup:mode", "pct_variation"] == pytest.approx(19.54, abs=0.01)
    # F = MS / MSE with MSE = SSE / (ab(r-1)) = SSE / 72; F_crit from the F table.
    mse = hand["SSE"] / 72
    assert tab.loc["setup", "f"] == pytest.approx(hand["SSA"] / 3 / mse, rel=1e-6)
    assert tab.loc["setup", "f_crit"] == pytest.approx(2.73, abs=0.01)  # F_{0.95; 3, 72}
    assert tab.loc["mode", "f_crit"] == pytest.approx(3.97, abs=0.01)  # F_{0.95; 1, 72}
    assert tab["significant"][["setup", "mode", "setup:mode"]].all()

    # Effects and their CIs (Jain Table 22.5): s_e = sqrt(MSE); s_alpha = s_e sqrt((a-1)/(abr)) ...
    s_e = math.sqrt(mse)
    t = sps.t.ppf(0.975, 72)
    assert res.s_e == pytest.approx(s_e, rel=1e-7)
    assert res.grand_mean == pytest.approx(hand["mu"])
    eff = {(e.term, e.levels): e for e in res.effects}
    for i, s in enumerate(SETUPS):
        e = eff[("setup", (s,))]
        assert e.value == pytest.approx(hand["alpha"][i], abs=1e-9)
        assert e.stddev == pytest.approx(s_e * math.sqrt(3 / 80))
        assert e.high - e.value == pytest.approx(t * s_e * math.sqrt(3 / 80))
        for j, m in enumerate(MODES):
            g = eff[("setup:mode", (s, m))]
            assert g.value == pytest.approx(hand["gamma"][i, j], abs=1e-9)
            assert g.stddev == pytest.approx(s_e * math.sqrt(3 * 1 / 80))
    assert eff[("mode", ("block read",))].value == pytest.approx(hand["beta"][0], abs=1e-9)
    assert eff[("mode", ("block read",))].stddev == pytest.approx(s_e * math.sqrt(1 / 80))
    # Sum-to-zero over each factor's levels.
    assert sum(eff[("setup", (s,))].value for s in SETUPS) == pytest.approx(0, abs=1e-9)

    # Residual diagnostics: residual = y - cell mean, Q-Q pairs of the right length, Shapiro-Wilk.
    assert res.residuals.size == 80 and res.qq_theoretical.size == 80
    assert np.all(np.diff(res.qq_ordered) >= 0)
    assert np.sum(res.residuals**2) == pytest.approx(hand["SSE"], rel=1e-7)
    assert 0 < res.shapiro_w <= 1 and 0 <= res.shapiro_p <= 1


def test_log_model_gives_ratios():
    # y = 10 * 2^A * 3^B * small noise -> in the log model the A effects are +-log(2)/2,
    # so the ratio between A's levels exp(e1 - e0) is 2.
    rng = np.random.default_rng(5)
    rows = [
        {"A": a, "B": b, "y": 10 * 2**a * 3**b * math.exp(rng.normal(0, 0.01))}
        for a in (0, 1)
        for b in (0, 1)
        for _ in range(4)
    ]
    res = factorial_anova(pd.DataFrame(rows), "y", ["A", "B"], log=True)
    eff = {(e.term, e.levels): e for e in res.effects}
    assert eff[("A", ("1",))].ratio / eff[("A", ("0",))].ratio == pytest.approx(2, rel=0.02)
    assert eff[("B", ("1",))].ratio / eff[("B", ("0",))].ratio == pytest.approx(3, rel=0.02)
    assert not res.row("A:B").significant  # multiplicative data: no interaction on the log scale
    additive = factorial_anova(pd.DataFrame(rows), "y", ["A", "B"], log=False)
    assert additive.row("A:B").significant  # ... but there is one on the linear scale


def test_one_factor_unequal_replications_hand_checked():
    # A: 1, 2, 3 (mean 2); B: 5, 7 (mean 6); grand mean 18/5 = 3.6.
    # SSA = 3 (2 - 3.6)^2 + 2 (6 - 3.6)^2 = 7.68 + 11.52 = 19.2 ; SSE = (1 + 0 + 1) + (1 + 1) = 4
    # SST = 88 - 5 * 3.6^2 = 23.2 ; df_e = 3 ; s_e = sqrt(4/3) = 1.1547
    # effect A = -1.6, s = s_e sqrt(1/3 - 1/5) = 0.42164 (Jain ch. 20, unequal sample sizes)
    df = pd.DataFrame({"g": list("AAABB"), "y": [1, 2, 3, 5, 7]})
    res = factorial_anova(df, "y", ["g"])
    assert res.row("g").ss == pytest.approx(19.2)
    assert res.sse == pytest.approx(4) and res.sst == pytest.approx(23.2) and res.df_error == 3
    eff = {e.levels[0]: e for e in res.effects}
    assert eff["A"].value == pytest.approx(-1.6) and eff["B"].value == pytest.approx(2.4)
    assert eff["A"].stddev == pytest.approx(0.42164, abs=1e-5)
    assert res.replications is None


def test_three_factors_balanced_types_agree():
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(9)
    rows = [
        {"a": a, "b": b, "c": c, "y": 5 * a + 2 * b * c + rng.normal()}
        for a in range(3)
        for b in range(2)
        for c in range(2)
        for _ in range(3)
    ]
    df = pd.DataFrame(rows)
    res = factorial_anova(df, "y", ["a", "b", "c"])
    terms = [r.term for r in res.table]
    assert terms == ["a", "b", "c", "a:b", "a:c", "b:c", "a:b:c", "error", "total"]
    assert sum(r.ss for r in res.table[:-1]) == pytest.approx(res.sst)
    model = smf.ols("y ~ C(a, Sum) * C(b, Sum) * C(c, Sum)", data=df).fit()
    t1, t3 = anova_lm(model, typ=1), anova_lm(model, typ=3)
    assert res.row("a:b:c").ss == pytest.approx(t1.loc["C(a, Sum):C(b, Sum):C(c, Sum)", "sum_sq"])
    assert res.row("b:c").ss == pytest.approx(t3.loc["C(b, Sum):C(c, Sum)", "sum_sq"])
    # Interaction effects of a 3-way term: s = s_e sqrt((3-1)(2-1)(2-1) / 36)
    e = next(e for e in res.effects if e.term == "a:b:c")
    assert e.stddev == pytest.approx(res.s_e * math.sqrt(2 / 36))


@pytest.mark.parametrize(
    "frame, factors, message",
    [
        (pd.DataFrame({"f": list("aabb"), "y": [1, 2, 3, 4]}), ["nope"], "available columns are f, y"),
        (pd.DataFrame({"f": list("aaaa"), "y": [1, 2, 3, 4]}), ["f"], "only one level"),
        (pd.DataFrame({"f": list("aabb"), "y": [1, "x", 3, 4]}), ["f"], "row 1"),
        (pd.DataFrame({"f": list("abb"), "y": [1, 3, 4]}), ["f"], "at least 2 replications"),
        (pd.DataFrame({"f": list("aabbaa"), "g": list("xxxxyy"), "y": range(6)}), ["f", "g"], "no rows for f=b, g=y"),
        (pd.DataFrame({"f": list("aaabbbaabb"), "g": list("xxxxxxyyyy"), "y": range(10)}), ["f", "g"], "unbalanced"),
    ],
)
def test_bad_designs_are_user_errors(frame, factors, message):
    with pytest.raises(UserError, match=message):
        factorial_anova(frame, "y", factors)


def test_log_needs_positive_values():
    df = pd.DataFrame({"f": list("aabb"), "y": [1, 0, 3, 4]})
    with pytest.raises(UserError, match="--log"):
        factorial_anova(df, "y", ["f"], log=True)


def test_csv_loader_reports_line_numbers(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("f,y\na,1\na,2\nb,oops\nb,4\n")
    with pytest.raises(UserError, match="line 4"):
        analyze_frame(load_csv(p), "y", ["f"])


def test_stacked_responses_match_manual_melt(bonnie_long):
    wide = load_csv(BONNIE)
    wide["setup"] = wide["filesystem"] + "/" + wide["kernel"].astype(str)
    long = stack_responses(wide, ["block_read_kbs", "block_write_kbs"])
    res = factorial_anova(long, "value", ["setup", "response"])
    manual = factorial_anova(bonnie_long, "kbs", ["setup", "mode"])
    assert res.row("setup:response").ss == pytest.approx(manual.row("setup:mode").ss)


def test_analysis_to_dict_is_json_ready(bonnie_long):
    import json

    a = analyze_frame(bonnie_long, "mb_s", ["setup", "mode"])
    d = json.loads(json.dumps(a.to_dict()))
    assert len(d["cells"]) == 8 and d["cells"][0]["n"] == 10
    assert [r["term"] for r in d["anova"]["table"]] == ["setup", "mode", "setup:mode", "error", "total"]
    assert len(d["anova"]["qq"]["theoretical"]) == 80
    single = analyze_frame(bonnie_long, "mb_s", [])
    assert single.anova is None and single.to_dict()["cells"][0]["n"] == 80
