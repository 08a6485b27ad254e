"""The user's message of a turn as text every layer can carry: UTF-8 (PostgreSQL ``TEXT``, JSON to the
proxy and the model server, the safety screen's tokenizer) and no NUL character (PostgreSQL refuses it).

Python turns bytes that are not UTF-8 into lone surrogates (``surrogateescape`` on stdin and argv, ``\\udce9``
in JSON); such a string cannot be encoded, and failed deep inside a library (psycopg, the tokenizer) with
a traceback. :func:`check_turn_text` refuses it where the turn starts, naming the fix and never the text.
"""

from __future__ import annotations

from .errors import InvalidValueError

__all__ = ["check_turn_text"]


def check_turn_text(text: str) -> None:
    """Raise InvalidValueError (``invalid_value``, not retryable) when ``text`` holds a lone surrogate or a
    NUL character; the message gives the 1-based position and the fix, not the text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidValueError(
            f"a turn message must be UTF-8 text (character {exc.start + 1} is not: a byte that is not UTF-8, "
            "or a lone surrogate): send UTF-8 (in a terminal, a UTF-8 locale such as LANG=C.UTF-8; or convert "
            "the input with iconv)"
        ) from None
    if "\x00" in text:
        raise InvalidValueError("a turn message cannot hold a NUL character (\\x00): remove it")
