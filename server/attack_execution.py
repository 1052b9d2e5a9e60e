"""Run one attack call in the process that holds the attack, and turn what happened into a
:class:`~server.attack_calls.CallResult`: the status mapping (``ok``, ``not_applicable``,
``timeout``, ``failed``, ``error``), with the message, output, seconds and hints read that go with it.

A worker process and the in-process executor (:mod:`server.in_process_executor`) both run their
calls through :func:`execute`, so a status means the same wherever the call ran.
"""

from __future__ import annotations

import torch

from attacks.base import Attack, AttackContext, AttackFailed, AttackTimeout
from server.attack_calls import Call, CallResult, group_of

__all__ = ["execute", "hints_read", "shared_store"]


def execute(attack: Attack, call: Call, ctx: AttackContext) -> CallResult:
    """Run one call and turn what happened into a status (in whichever process runs it)."""
    # seconds are read off the budget's clock, so a call stopped at its budget reports at least it
    torch.manual_seed(ctx.seed)  # module inits draw from the global RNG: results must not depend
    # on what ran before in this process
    if call.kind == "prepare":
        try:
            attack.prepare(call.payload, call.knowledge, ctx)
            return CallResult("ok", seconds=ctx.budget.elapsed())
        except Exception as exc:  # reconstruct() retries and reports it in the rows
            return CallResult("error", f"{type(exc).__name__}: {exc}".splitlines()[0],
                              seconds=ctx.budget.elapsed())
    reason = attack.not_applicable(call.payload, call.knowledge)
    if reason:
        return CallResult("not_applicable", reason, seconds=ctx.budget.elapsed())
    call.knowledge.forget_reads()  # the applicability check above is ours, not the attack's
    try:
        output = attack.reconstruct(call.payload, call.knowledge, ctx)
        status, message = "ok", ""
        if ctx.budget.expired():
            status, message = "timeout", f"returned after its {ctx.budget.seconds:g} s budget"
        result = CallResult(status, message, output, ctx.budget.elapsed())
    except AttackTimeout as exc:
        result = CallResult("timeout", str(exc), ctx.last_checkpoint, ctx.budget.elapsed(), info=exc.info)
    except AttackFailed as exc:
        result = CallResult("failed", str(exc).splitlines()[0], seconds=ctx.budget.elapsed(), info=exc.info)
    except Exception as exc:  # an attack bug must not stop the round
        result = CallResult("error", f"{type(exc).__name__}: {exc}".splitlines()[0],
                            seconds=ctx.budget.elapsed())
    result.hints_read = hints_read(call, ctx)
    return result


def hints_read(call: Call, ctx: AttackContext) -> frozenset:
    """What the call read of its granted hints. A call that reused its fit group's fit
    (``ctx.shared_fit``) read, through that fit, what the call that computed it read."""
    read = call.knowledge.hints_read()
    if ctx.fits.get("seed") == ctx.seed:
        read = ctx.fits["hints_read"] = read | ctx.fits.get("hints_read", frozenset())
    return read


def shared_store(stores: dict[str, dict], attack: Attack, call: Call) -> dict:
    """The run-scoped store of the call's attack group, or a fresh one for a call that stands alone."""
    return stores[group_of(call.name)] if attack.keeps_state else {}
