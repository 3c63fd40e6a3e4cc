"""One study run as the report reads it: the study, its campaigns in a store, the claim frame, the run's
changes from the design and the verdicts (:class:`StudyView`), and how it is loaded from a store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fsmeter.errors import UserError
from fsmeter.study.claims import ClaimChecker
from fsmeter.study.evidence import Verdict
from fsmeter.study.frames import study_frame
from fsmeter.study.model import Study
from fsmeter.study.plan import Change, changes_of


@dataclass
class StudyView:
    study: Study
    db: Path
    campaigns: pd.DataFrame
    frame: pd.DataFrame  # study_frame(): kept trials, study names
    data: dict  # fsmeter.store.load() of the study's campaigns
    changes: list[Change]
    verdicts: list[Verdict]
    paper: dict[str, Any] = field(default_factory=dict)  # claim id -> PaperResult on the paper's own data
    tables: list[dict] = field(default_factory=list)
    figures: list[dict] = field(default_factory=list)


def study_campaign_ids(store, study: Study, campaign: str | None) -> list:
    if campaign is not None:
        return [store.campaign(campaign)["id"]]
    prefix = f"study-{study.slug}-"
    ids = [r["id"] for r in store.campaigns() if r["name"].startswith(prefix)]
    if not ids:
        raise UserError(
            f"{store.path}: no campaign of study {study.slug}: run `fsmeter study run {study.slug}` "
            "first, or name the database with --db"
        )
    return ids


def run_scale(study: Study, names: list[str]) -> str | None:
    """The scale of a run from its campaigns' names (``study-SLUG-SCALE``): None when they differ or
    one is not a study campaign's name."""
    prefix = f"study-{study.slug}-"
    scales = {n[len(prefix) :] if n.startswith(prefix) else None for n in names}
    return scales.pop() if len(scales) == 1 else None


def load_run(
    study: Study, db: Path, campaign: str | None = None
) -> tuple[dict, list[Change], pd.DataFrame, list, Study]:
    """One run of a study from a store: (the store's data, the run's changes, the claim frame, the verdicts,
    the study as the run's scale judges it: Study.at_scale)."""
    from fsmeter.store import load, open_store

    with open_store(db, create=False) as store:
        ids = study_campaign_ids(store, study, campaign)
        sources = [store.campaign(i)["source"] for i in ids]
        study = study.at_scale(run_scale(study, [store.campaign(i)["name"] for i in ids]))
    data = load(db, ids)
    changes: list[Change] = []
    for src in sources:
        for c in changes_of(src):
            if c not in changes:
                changes.append(c)
    frame = study_frame(study, data["metrics"], data["environment"], data.get("phases"), data.get("storage"))
    return data, changes, frame, ClaimChecker(study, frame, changes).check_all(), study
