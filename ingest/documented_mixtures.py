"""Register a model's documented training mixture (from a CSV or YAML file) in the lake's
`mixtures_documented`, so that `fct_mixture_evaluation` scores the model's mixture estimates against it.

The seed (`seeds/mixtures_documented.csv`) holds published recipes and the sandbox writes its own models'
truth; a user's model had no way in. Here:
- the file is one row per domain with a `share` (CSV columns `domain,share`; YAML a list of
  `{domain, share}` or a mapping `domain: share`); any other or missing field is an error, not ignored;
- shares must be finite and >= 0 and must not all be 0. Shares that do not sum to 1 (within 1e-6) are
  normalised, and the result says so: technical reports give percentages, token counts or rounded shares
  (the seed's own recipes are off 1 by up to 2e-3), and the marts use shares of the total anyway
  (int_mixtures_documented), so refusing them would only make the user divide by hand;
- one documented mixture per model: the lake's key is (model, domain), so a second `add` for the same model
  (compared case-insensitively, as the marts match runs to models) replaces the first, in one atomic
  partition write; a model the sandbox already documents is refused (its truth is not the user's to
  replace). Where the seed documents the model, the lake's recipe replaces the seed's in the marts.
Everything is checked before anything is written.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError
from ingest.home import model_key

TABLE = "mixtures_documented"
FIELDS = ("domain", "share")
SUM_TOL = 1e-6
PARTITION_PREFIX = "documented"


@dataclass(frozen=True)
class DocumentedMixture:
    """A validated mixture: shares normalised to sum to 1, in the file's order."""

    model: str
    shares: tuple[tuple[str, float], ...]
    source: str
    total_as_given: float

    @property
    def normalised(self) -> bool:
        return abs(self.total_as_given - 1.0) > SUM_TOL


@dataclass(frozen=True)
class Registered:
    """What `register` wrote and what it replaced, for the CLI to print."""

    mixture: DocumentedMixture
    partition: str
    replaced_source: str | None   # the earlier entry of this model (its source), if any
    seed_replaced: bool           # the seed documents this model: the lake's recipe now wins in the marts
    n_matching_runs: int          # runs that fct_mixture_evaluation will pair with this model


def read_shares(path: Path) -> list[tuple[str, float]]:
    """(domain, share) rows of a CSV or YAML file, validated one by one (one-line UserErrors)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"mixture file {path} not found" if not path.exists() else f"{path} is not a file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(path)
    elif suffix in (".yaml", ".yml"):
        rows = _yaml_rows(path)
    else:
        raise UserError(f"{path}: a documented mixture is a .csv (columns domain,share) or a .yaml/.yml file, "
                        f"not {suffix or 'a file without a suffix'}")
    if not rows:
        raise UserError(f"{path} has no domains; give one row per domain with its share (domain,share)")
    out, seen = [], set()
    for where, domain, share in rows:
        if not isinstance(domain, str) or not domain.strip():
            raise UserError(f"{path} {where}: the domain must be non-empty text, not {domain!r}")
        domain = domain.strip()
        if domain.casefold() in seen:
            raise UserError(f"{path} {where}: domain {domain!r} appears twice; give each domain once")
        seen.add(domain.casefold())
        out.append((domain, _share(path, where, domain, share)))
    return out


def _share(path: Path, where: str, domain: str, raw) -> float:
    if isinstance(raw, bool):
        raise UserError(f"{path} {where}: the share of {domain!r} must be a number, not {raw!r}")
    try:
        if isinstance(raw, str) and "_" in raw:  # float() reads 1_0 as 10
            raise ValueError(raw)
        v = float(raw)
    except (TypeError, ValueError):
        raise UserError(f"{path} {where}: the share of {domain!r} must be a number, not {raw!r}") from None
    if not math.isfinite(v) or v < 0:
        raise UserError(f"{path} {where}: the share of {domain!r} must be a finite number >= 0, not {raw!r}")
    return v


def _check_fields(path: Path, where: str, fields) -> None:
    fields = [str(f).strip() for f in fields]
    twice = sorted({f for f in fields if fields.count(f) > 1})
    if twice:
        raise UserError(f"{path} {where}: field {twice[0]!r} appears twice; a documented mixture has exactly the "
                        "fields domain and share")
    unknown = [f for f in fields if f not in FIELDS]
    missing = [f for f in FIELDS if f not in fields]
    if unknown or missing:
        what = "; ".join(x for x in (unknown and f"unknown field(s) {', '.join(map(repr, unknown))}",
                                     missing and f"missing {', '.join(map(repr, missing))}") if x)
        raise UserError(f"{path} {where}: {what}; a documented mixture has exactly the fields domain and share "
                        "(one row per domain)")


def _csv_rows(path: Path) -> list[tuple[str, str, object]]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise UserError(f"{path} is empty; give a header domain,share and one row per domain")
            _check_fields(path, "header", header)
            names = [h.strip() for h in header]
            rows = []
            for line_no, values in enumerate(reader, start=2):
                if not any(v.strip() for v in values):
                    continue
                if len(values) != len(names):
                    raise UserError(f"{path} line {line_no}: {len(values)} values for the {len(names)} columns "
                                    f"{','.join(names)}")
                rec = dict(zip(names, (v.strip() for v in values)))
                rows.append((f"line {line_no}", rec["domain"], rec["share"]))
    except UnicodeDecodeError:
        raise UserError(f"{path} is not valid UTF-8 text") from None
    except csv.Error as e:
        raise UserError(f"{path} is not valid CSV ({e})") from None
    return rows


def _yaml_rows(path: Path) -> list[tuple[str, object, object]]:
    import yaml

    class _UniqueKeys(yaml.SafeLoader):
        """safe_load keeps the last of duplicate keys: a domain given twice would pass silently."""

        def construct_mapping(self, node, deep=False):
            keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
            dup = sorted({str(k) for k in keys if keys.count(k) > 1})
            if dup:
                raise UserError(f"{path}: {dup[0]!r} appears twice in one mapping; give each domain (and each "
                                "field) once")
            return super().construct_mapping(node, deep=deep)

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeys)  # noqa: S506 - a SafeLoader
    except UnicodeDecodeError:
        raise UserError(f"{path} is not valid UTF-8 text") from None
    except yaml.YAMLError as e:
        raise UserError(f"{path} is not valid YAML ({' '.join(str(e).split())})") from None
    if isinstance(data, dict):  # domain: share
        return [(f"key {k!r}", k, v) for k, v in data.items()]
    if isinstance(data, list):
        rows = []
        for i, item in enumerate(data, start=1):
            if not isinstance(item, dict):
                raise UserError(f"{path} item {i}: expected a mapping with domain and share, not {item!r}")
            _check_fields(path, f"item {i}", item.keys())
            rows.append((f"item {i}", item["domain"], item["share"]))
        return rows
    raise UserError(f"{path}: expected a list of {{domain, share}} mappings or a mapping domain: share, "
                    f"not {type(data).__name__}")


def load_mixture(path: Path, model: str, source: str | None = None) -> DocumentedMixture:
    """The file's mixture for `model`, normalised (see the module docstring)."""
    if model is None or not model.strip() or model != model.strip() or any(ord(c) < 32 for c in model):
        raise UserError(f"--model {model!r} must be a model name as its runs name it (e.g. EleutherAI/pythia-1b "
                        "or a model folder), without surrounding whitespace or control characters")
    if source is not None and not source.strip():
        raise UserError("--source must not be empty; say where the mixture is documented (a report, a URL)")
    rows = read_shares(path)
    total = sum(s for _, s in rows)
    if total <= 0:
        raise UserError(f"{path}: every share is 0; give each domain's share of the training data")
    shares = tuple((d, s / total) for d, s in rows)
    return DocumentedMixture(model, shares, source.strip() if source else str(Path(path).resolve()), total)


def partition_of(model: str) -> str:
    from ingest.lake import partition_name

    return partition_name(PARTITION_PREFIX, model.casefold())


def register(lake, mixture: DocumentedMixture, seed_models: list[str] = ()) -> Registered:
    """Write `mixture` as the model's documented mixture, replacing an earlier one of the same model.

    A model folder inside the warehouse is filed relative to it, as its runs record it (`stored_model`), and
    models are compared as the marts compare them (`model_key`): an earlier entry filed under the folder's
    absolute path (before paths were relative, or in the place the warehouse was moved from) is the same
    model's, and is replaced."""
    from dataclasses import replace

    from ingest.home import stored_model
    from ingest.lake import make_key

    mixture = replace(mixture, model=stored_model(lake.home, mixture.model))
    ours = partition_of(mixture.model)
    key = model_key(lake.home, mixture.model).casefold()
    replaced, stale = None, []
    for part in lake.partitions(TABLE):
        rows = [r for r in lake.read(TABLE, part).to_pylist() if model_key(lake.home, r["model"]).casefold() == key]
        if not rows:
            continue
        if part != ours and not part.startswith(f"{PARTITION_PREFIX}--"):
            raise UserError(f"model {rows[0]['model']!r} already has a documented mixture in the lake (partition "
                            f"{part}, source {rows[0]['source']!r}; the sandbox writes its models' true mixture); "
                            "register yours under another --model name")
        replaced = rows[0]["source"]
        if part != ours:
            stale.append(part)
    variants = [m for m in seed_models if m.casefold() == key and m != mixture.model]
    if variants:
        raise UserError(f"the seed documents this model as {variants[0]!r} (seeds/mixtures_documented.csv); use "
                        f"--model {variants[0]!r} to replace its recipe, or another name")
    others = {r["model"] for part in lake.partitions(TABLE) if part != ours and part not in stale
              for r in lake.read(TABLE, part).to_pylist()} | set(seed_models)
    others = {m for m in others if model_key(lake.home, m).casefold() != key}
    for run_model in {r["model"] or "" for r in lake.read("runs").to_pylist()}:
        if _pairs(lake.home, run_model, mixture.model):
            clash = sorted(m for m in others if _pairs(lake.home, run_model, m))
            if clash:
                raise UserError(f"--model {mixture.model!r} would pair the runs of {run_model!r} with a second "
                                f"documented mixture (they already pair with {clash[0]!r}); give the model's full "
                                "name as its runs name it, or another name")
    rows = [{"mixture_id": make_key(mixture.model, d), "model": mixture.model, "domain": d, "weight": s,
             "source": mixture.source} for d, s in mixture.shares]
    with lake.transaction():
        lake.write(TABLE, ours, rows)
        for part in stale:
            lake.delete(TABLE, part)
    return Registered(mixture, ours, replaced, mixture.model in seed_models, _matching_runs(lake, mixture.model))


def _pairs(home, run_model: str, documented: str) -> bool:
    """fct_mixture_evaluation's rule: a run pairs with a documented model of the same name or of its last path
    segment, case-insensitively, both read as the marts read them (`model_key`; var mixture_model_aliases adds
    more; not counted here)."""
    run_model = model_key(home, run_model)
    key = model_key(home, documented).casefold()
    return key in (run_model.casefold(), run_model.rsplit("/", 1)[-1].casefold())


def _matching_runs(lake, model: str) -> int:
    """Runs fct_mixture_evaluation pairs with `model` by name."""
    return sum(1 for r in lake.read("runs").to_pylist() if _pairs(lake.home, r["model"] or "", model))


def seed_models() -> list[str]:
    """Models the project's seed documents (seeds/mixtures_documented.csv), or [] without the project."""
    from ingest.home import project_dir

    try:
        seed = project_dir() / "seeds" / "mixtures_documented.csv"
        with open(seed, encoding="utf-8") as fh:
            return sorted({r["model"] for r in csv.DictReader(fh)})
    except (UserError, OSError):
        return []
