"""`"receipt": true` on /v1/chat/completions and /v1/completions: the answer's receipt (kinetic.receipt), signed
with serve's --sign-key where it was given; a grammar, JSON schema or tools' grammar is recorded with the sampling."""

from __future__ import annotations

from typing import Any, Optional

from kinetic.receipt import device_record, grammar_record, make_receipt, sign
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields
from kinetic.server.served import Run


def receipt_asked(fields: Fields) -> tuple[Fields, bool]:
    """The request's fields without receipt (which the routes without receipts refuse), and whether it asked."""
    if not fields.boolean("receipt"):
        return fields, False
    return Fields({name: value for name, value in fields.body.items() if name != "receipt"}), True


def check_receipt(run: Run) -> None:
    if run.job.n_indent or run.job.t_max_predict_ms:
        raise bad_request("a receipt does not record n_indent or t_max_predict_ms; leave out receipt or them",
                          "receipt")


def receipt_for(run: Run, given: Any, text: str) -> Optional[dict[str, Any]]:
    """The finished run's receipt; None for a run the client left (it has no finish)."""
    if run.finish_reason is None:
        return None
    session, job = run.served.session, run.job
    limits = {"max_tokens": job.max_tokens if job.max_tokens > 0 else None, "stop": list(job.stops),
              **grammar_record(job.grammar)}
    receipt = make_receipt(session.path, device_record(session), given, job.prompt, run.settings, limits,
                           run.finish_reason, text, run.tokens)
    key = run.served.defaults.sign_key
    return sign(receipt, key) if key is not None else receipt
