"""Errors on the command line: every failure becomes one ``ppdm: error: ...`` line and an exit
code (1 for a bug, 2 for bad input, a refused parameter or a failed check, 130 when interrupted).

A library error names the keyword argument (``k must be an integer >= 1``, ``parameter="k"``);
the command line shows it as its flag from :data:`~ppdm_dask.cli.flags.FLAGS` (``(--k)``), or, for
an error that carries no parameter (``s0 must lie in (0, 1)``), the flag of the command that was
run whose name leads the message (``(--s0)``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

import click

from ..errors import PPDMError, with_message
from .commands import LazyGroup
from .flags import cli_message


def _one_line(text: str) -> str:
    text = str(text).strip()
    return text.splitlines()[0] if text else ""


class PPDMGroup(LazyGroup):
    """The ``ppdm`` group: its commands load when they run (:class:`~.commands.LazyGroup`), and
    library errors become one clear line and a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.echo("ppdm: interrupted", err=True)
            ctx.exit(130)
        except PPDMError as exc:
            fail(ctx, exc, 2)
        except Exception as exc:  # a bug or an environment failure: still one line unless --debug
            fail(ctx, exc, 1)


def fail(ctx: click.Context, exc: BaseException, code: int) -> None:
    """Print ``exc`` as the one ``ppdm: error:`` line and exit with ``code`` (with ``--debug``:
    raise it, for its traceback)."""
    if getattr(ctx.find_root().obj, "debug", False):  # the group's Context (--debug), once its options are read
        raise exc
    if isinstance(exc, PPDMError):
        msg = _one_line(cli_message(exc))  # parameter names shown as flags (one table: .flags)
        if not (exc.cli or exc.fix or exc.parameter):
            msg = with_flag(ctx, exc, msg)
    else:
        exc = with_message(exc)  # a worker's exception may arrive without its message
        msg = f"{type(exc).__name__}: {_one_line(str(exc))}" if str(exc).strip() else type(exc).__name__
    click.echo(f"ppdm: error: {msg}", err=True)
    ctx.exit(code)


_LEADING_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?=\s*(?:=|<|>|must\b|is\b|should\b|cannot\b|has\b))")


def _leaf_command(ctx: click.Context, exc: BaseException) -> click.Command:
    """The sub-command the user ran (``emask choose``): the innermost click context the error
    passed through (the root context has consumed its arguments by then)."""
    leaf = ctx
    tb = exc.__traceback__
    while tb is not None:
        frame_ctx = tb.tb_frame.f_locals.get("ctx")
        if isinstance(frame_ctx, click.Context):
            leaf = frame_ctx
        tb = tb.tb_next
    return leaf.command


def with_flag(ctx: click.Context, exc: BaseException, msg: str) -> str:
    """A library message about a parameter (``"s0 must lie in (0, 1)"``) with the flag of the
    command that sets it (``"... (--s0)"``): the library names its keyword arguments, the user
    typed flags."""
    m = _LEADING_NAME.match(msg)
    if not m:
        return msg
    for param in _leaf_command(ctx, exc).params:
        if param.name == m.group(1) and isinstance(param, click.Option) and param.opts:
            flag = param.opts[0]
            return f"{msg} ({flag})" if flag not in msg else msg
    return msg


def usage_error(message: str, hint: str | None = None) -> click.UsageError:
    """A usage error the command line prints as one line (with the flag that fixes it)."""
    return click.UsageError(f"{message} ({hint})" if hint else message)


def main(args: Sequence[str] | None = None, prog_name: str = "ppdm") -> None:
    """Run the ``ppdm`` group: click's usage errors become one ``ppdm: error:`` line too.

    Before the interpreter finalizes, the process waits for Arrow's threads to finish the reads
    they were still closing (:mod:`ppdm_dask.arrow_threads`, an exit handler): a read that ended
    just before an error otherwise had the process abort at exit (status 134).
    """
    from ..arrow_threads import register_exit_wait
    from . import cli

    register_exit_wait()
    try:
        # without standalone mode click returns the code of ctx.exit() instead of exiting
        rc = cli.main(args=list(args) if args is not None else None, prog_name=prog_name, standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("ppdm: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        failed_in: click.Context | None = getattr(exc, "ctx", None)  # usage errors carry the command's context
        where = f" (see '{failed_in.command_path} --help')" if failed_in is not None else ""
        click.echo(f"ppdm: error: {_one_line(exc.format_message())}{where}", err=True)
        sys.exit(exc.exit_code if exc.exit_code else 2)
    sys.exit(rc if isinstance(rc, int) else 0)
