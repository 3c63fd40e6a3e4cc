"""What a claim's verdict may say given how the re-run ran: the regime of the rows it rests on (phase
lengths, others' CPU, the page cache's share, the storage's and the CPU's figures), the run changes
that void it (*not comparable here*) and the gates that make it *inconclusive*
(:mod:`fsmeter.study.gates` holds the rules). A part of :class:`~fsmeter.study.claims.ClaimChecker`
(a mixin: it uses the checker's study, frame, changes and rules)."""

from __future__ import annotations

import pandas as pd

from fsmeter.study import gates as gt
from fsmeter.study.evidence import Verdict
from fsmeter.study.model import Claim, Study
from fsmeter.study.verdict import INCONCLUSIVE, MIN_TRIALS, NOT_COMPARABLE, NOT_TESTABLE


def _page_cache_share(rows):
    """Per row, the page cache's share of the phase's I/O: of its reads (``cache_read_share``), or, for a
    phase that read too little to say (a write phase), of its writes: the share of the bytes written
    that had not reached the device when the phase ended (``cache_write_share``). None when the rows
    carry neither column."""
    cols = [c for c in ("cache_read_share", "cache_write_share") if c in rows.columns]
    if not cols:
        return None
    share = pd.to_numeric(rows[cols[0]], errors="coerce")
    for c in cols[1:]:
        share = share.fillna(pd.to_numeric(rows[c], errors="coerce"))
    return share


def _concerns(change, claim: Claim, study: Study) -> bool:
    """Does a run change touch this claim? A change to one workload ("w: size ...") touches only claims on
    that workload, a change to one configuration only claims that compare or name it; the rest touch all."""
    head = str(change.what).split(":", 1)[0].strip()
    workloads = {w.id for w in study.workloads}
    if head in workloads:
        mine = (
            set(claim.workloads) | set(claim.numerator.get("workload", [])) | set(claim.denominator.get("workload", []))
        )
        if claim.compare == "workload" or claim.factor == "workload":
            mine |= {str(x) for t in claim.tiers for x in t} | {str(x) for p in claim.pairs for x in p}
        return not mine or head in mine
    if str(change.what).startswith("configuration "):
        cid = str(change.what)[len("configuration ") :].split(" ", 1)[0]
        mine = set(claim.configurations)
        if claim.compare == "filesystem":
            mine |= {str(x) for t in claim.tiers for x in t}
        return not mine or cid in mine
    return True


class ClaimGating:
    """The regime, voiding and gating of :class:`~fsmeter.study.claims.ClaimChecker`."""

    def _regime(self, g) -> dict:
        """The regime of these rows (fsmeter.study.gates.merge's rules), and which measurements some row
        lacks (``missing``). Reads from the page cache count only for workloads the study did not run
        from memory itself (its ``regime = "cache"`` ones did: cache residency is their regime, not a
        change), and a row of such a workload needs no cache share."""
        if self.paper:
            return {}
        out: dict = {}
        missing = []
        cached = {w.id for w in self.study.workloads if w.regime == "cache"}
        for col in gt.REGIME_COLUMNS:
            if col == "cache_write_share":
                continue  # folded into cache_read_share (_page_cache_share)
            rows = g
            if col == "cache_read_share" and "workload" in g.columns:
                rows = g[~g["workload"].astype(str).isin(cached)]
                if rows.empty:  # the study itself ran these from memory: no cache share needed
                    continue
            if col == "cache_read_share":
                share = _page_cache_share(rows)
                if share is None:
                    missing.append(col)
                    continue
                if share.isna().any():
                    missing.append(col)
                if share.notna().any():
                    out[col] = float(share.max())
                continue
            if col not in rows.columns:
                if col not in gt.OPTIONAL_REGIME_COLUMNS and col != "storage_class":
                    missing.append(col)
                continue
            if col == "storage_class":
                classes = sorted({str(x) for x in rows[col].dropna()})
                if classes:
                    out[col] = classes
                continue
            vals = pd.to_numeric(rows[col], errors="coerce")
            if vals.isna().any() and col not in gt.OPTIONAL_REGIME_COLUMNS:
                missing.append(col)
            if vals.notna().any():
                out[col] = float(gt.COMBINE[col](vals.dropna()))
        if missing:
            out["missing"] = missing
        return out

    def _affects(self, claim: Claim) -> set:
        """What this run's changes that concern the claim alter (their ``affects``)."""
        return {a for c in self.changes if _concerns(c, claim, self.study) for a in c.affects}

    def _void(self, v: Verdict) -> Verdict:
        """A re-run verdict with nothing to test: a claim this run changed the subject of, or bound by a
        resource far faster here than on the paper's machine, is "not comparable here" whatever data it has
        (B01's disk is gone whether its workload ran or not)."""
        if self.paper or v.outcome not in (INCONCLUSIVE, NOT_TESTABLE):
            return v
        hit = [a for a in v.claim.sensitive_to if a in self._affects(v.claim)]
        why = [f"this run changed what the claim is about: {', '.join(hit)}"] if hit else []
        res, _ = gt.resource_gates(v.claim.bound_by, self.study.machine_of(v.claim), self._machine_regime)
        why += [r for r in res if "not measured" not in r]
        if why:
            v.gates += why
            v.notes.append(f"on the numbers alone: {v.outcome} ({v.reason})")
            v.outcome = NOT_COMPARABLE
        return v

    def _cpu_levels(self, claim: Claim) -> list[int]:
        """The CPU counts a claim is about, from its `where` on a factor named cpus (study levels such as
        "UP" mapped to the count the study file gives)."""
        want = claim.where.get("cpus")
        if want is None:
            return []
        fac = next((f for f in getattr(self.study, "factors", []) if f.name == "cpus"), None)
        out = []
        for lv in want if isinstance(want, list) else [want]:
            mapped = fac.map.get(str(lv), lv) if fac is not None else lv
            try:
                out.append(int(mapped))
            except (TypeError, ValueError):
                continue
        return out

    def _gate(self, v: Verdict) -> None:
        """The re-run gates (fsmeter.study.gates): comparability first (run changes, cache residency,
        the resources the paper was bound by, the CPU count), then the data (trials, phase length,
        settling, busy machine, emulation). A missing measurement fails closed."""
        claim, limits = v.claim, self.study.study
        affects = self._affects(claim)
        hit = [a for a in claim.sensitive_to if a in affects]
        if affects:
            v.notes.append(
                "this run's changes touching it: "
                + ", ".join(sorted(affects))
                + (f" (sensitive to {', '.join(hit)})" if hit else " (none it is sensitive to)")
            )
        missing = set(v.regime.get("missing") or ())
        if (
            "cache_residency" in claim.sensitive_to
            and "cache_residency" not in hit
            and limits.max_cache_read_share is not None
        ):
            cache = v.regime.get("cache_read_share")
            if "cache_read_share" in missing:
                hit.append(
                    "cache_residency (not measured: the page-cache share of the I/O is unknown for a phase it "
                    "rests on: under 1 MiB read and written, or a target without a block device of its own)"
                )
            elif cache is not None and cache > limits.max_cache_read_share:
                hit.append(
                    f"cache_residency (measured: {cache:.0%} of the bytes a phase read came from the page cache, "
                    "or of those it wrote had not reached the device at its end)"
                )
        why = [f"this run changed what the claim is about: {', '.join(hit)}"] if hit else []
        regime = {**self._machine_regime, **v.regime}
        res, res_notes = gt.resource_gates(claim.bound_by, self.study.machine_of(claim), regime)
        why += res
        v.notes += res_notes
        cpu = gt.cpu_count_gate(self._cpu_levels(claim), v.regime.get("cpus_online"))
        if cpu:
            why.append(cpu)
        if why:
            v.gates = why
            v.outcome = NOT_COMPARABLE
            v.notes.append(f"on the numbers alone: {v.data_outcome}")
            return
        trials = min((min(t.sa.n, t.sb.n) for t in v.tests if t.descriptive is None), default=None)
        reasons = gt.data_gates(
            min_trials=MIN_TRIALS,
            trials=trials,
            min_phase_s=limits.min_phase_s,
            settle_s=self.rules.settle_s,
            max_other_cpu_share=limits.max_other_cpu_share,
            regime=v.regime,
        )
        if reasons:  # shown on an inconclusive verdict too: they say why the numbers may be noisy
            v.gates = reasons
            if v.outcome != INCONCLUSIVE:
                v.outcome = INCONCLUSIVE
                v.notes.append(f"on the numbers alone: {v.data_outcome}")
        model = [n for n in res_notes if n.startswith("on a model of the paper's disk")]
        if model and v.outcome not in (INCONCLUSIVE, NOT_TESTABLE):
            v.reason += f" ({model[0]})"
        if v.regime.get("emulated_disk_bound") and v.outcome not in (INCONCLUSIVE, NOT_TESTABLE):
            v.reason += f" ({gt.EMULATED_DISK_BOUND})"
