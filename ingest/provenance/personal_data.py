"""Personal data and secrets in reproduced text: e-mail addresses, phone numbers, keys and tokens.

Each kind has one detector, kept in a registry (`DETECTORS`), each a well-kept library:

* `email`: candidates are the `local@domain` runs of the text whose local part starts with a letter or digit and
  whose last domain label has 2+ letters and is not followed by `_` (every real top-level domain has 2+ letters:
  this keeps numpy's matrix product `A@B.T` out, and reST's ``` ``@torch.library.custom_op`` ```, found in the
  sandbox corpus); `email-validator` decides (RFC syntax, no special-use domain such as `localhost`; no DNS
  look-up, `check_deliverability=False`).
* `phone`: Google's `phonenumbers` matcher (`Leniency.VALID`: a number that is valid for its region; national
  numbers are read in `PHONE_REGION`). A bare run of digits with no `+`, bracket, space, dot or dash in it
  (`4155552671`) is not flagged: in code and data such a run is an id, a count or a timestamp far more often
  than a phone number. Version numbers (`2.13.0`, `1.26.4.2024`) are never valid numbers.
* `secret`: Yelp's `detect-secrets`, with every pattern plugin (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  private keys, JWTs, credentials in URLs, `password = "..."` keywords...). Its two entropy plugins and the
  public-IP plugin are left out: hex digests (`3f786850e3...`: git commits, checksums) and base64 blobs in
  code are high-entropy strings that are not secrets, and an IP address is none of the three kinds asked for.

A finding is never stored or printed in full: `mask` keeps its first 2 characters and its kind; `value_hash`
(blake2b) lets the marts count distinct values without keeping them. The span's text in the lake still holds
the value at [start, end) for an auditor who needs it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from ingest.registry import Registry

PHONE_REGION = "US"  # the region national numbers are read in (phonenumbers' region codes)
# entropy plugins flag hex digests and base64 blobs; IPs are not personal data of the kinds counted here
_SECRET_PLUGINS_LEFT_OUT = frozenset({"HexHighEntropyString", "Base64HighEntropyString", "IPPublicDetector"})
_EMAIL_CANDIDATE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                              r"\.[A-Za-z]{2,}(?![A-Za-z0-9_-]|\.[A-Za-z0-9])")
_PHONE_SEPARATORS = re.compile(r"[+()\s.\-/]")


@dataclass(frozen=True)
class Finding:
    """One piece of personal data in a text: [start, end) are character offsets into the text."""

    kind: str      # email, phone, secret
    subtype: str   # e.g. the detect-secrets type ("AWS Access Key"), "international" / "national" for phones
    start: int
    end: int
    value: str

    @property
    def masked(self) -> str:
        return mask(self.value, self.kind)

    @property
    def value_hash(self) -> str:
        return hashlib.blake2b(self.value.encode("utf-8"), digest_size=8).hexdigest()


def mask(value: str, kind: str) -> str:
    """What a report may show: the first 2 characters, ***, the kind (`jo***email`)."""
    return f"{value[:2]}***{kind}"


DETECTORS: Registry[Callable[[str], list[Finding]]] = Registry("personal-data detector")


@DETECTORS.register("email")
def find_emails(text: str) -> list[Finding]:
    from email_validator import EmailNotValidError, validate_email

    out = []
    for m in _EMAIL_CANDIDATE.finditer(text):
        cand = m.group(0).rstrip(".")
        try:
            validate_email(cand, check_deliverability=False)
        except EmailNotValidError:
            continue
        out.append(Finding("email", "address", m.start(), m.start() + len(cand), cand))
    return out


@DETECTORS.register("phone")
def find_phones(text: str) -> list[Finding]:
    from phonenumbers import Leniency, PhoneNumberMatcher

    out = []
    for m in PhoneNumberMatcher(text, PHONE_REGION, leniency=Leniency.VALID):
        raw = m.raw_string
        if not _PHONE_SEPARATORS.search(raw):
            continue  # a bare digit run: an id or a timestamp, not flagged (module docstring)
        sub = "international" if raw.lstrip().startswith("+") else "national"
        out.append(Finding("phone", sub, m.start, m.end, raw))
    return out


@functools.lru_cache(maxsize=1)
def _secret_plugins() -> tuple[dict, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    names = sorted({c.__name__ for c in get_mapping_from_secret_type_to_class().values()} - _SECRET_PLUGINS_LEFT_OUT)
    return tuple({"name": n} for n in names)


@DETECTORS.register("secret")
def find_secrets(text: str) -> list[Finding]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    out = []
    with transient_settings({"plugins_used": list(_secret_plugins())}):
        offset = 0
        for line in text.splitlines(keepends=True):
            for s in scan_line(line):
                value = s.secret_value or ""
                at = line.find(value) if value else -1
                start = offset + max(at, 0)
                out.append(Finding("secret", s.type, start, start + len(value), value))
            offset += len(line)
    return out


def find_personal_data(text: str, kinds: tuple[str, ...] | None = None) -> list[Finding]:
    """Every finding of the chosen kinds (default all), sorted by position; one per (kind, start)."""
    found: dict[tuple[str, int], Finding] = {}
    for kind in kinds or tuple(DETECTORS.names()):
        for f in DETECTORS.get(kind)(text):
            found.setdefault((f.kind, f.start), f)
    return sorted(found.values(), key=lambda f: (f.start, f.kind, f.end))


def versions() -> str:
    """The detectors' versions and settings, written with every scan row."""
    from importlib.metadata import version

    return (f"email-validator {version('email-validator')}; phonenumbers {version('phonenumbers')} "
            f"region {PHONE_REGION}; detect-secrets {version('detect-secrets')} "
            f"without {', '.join(sorted(_SECRET_PLUGINS_LEFT_OUT))}")
