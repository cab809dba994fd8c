"""Tic-tac-toe end-game boards as categorical transactions (the layout of the UCI
"Tic-Tac-Toe Endgame" data, generated here from the rules of the game).

Every board reachable by legal play (x moves first) at which the game ends — a line of three or a
full board — once: 958 boards, all distinct, so every record is unique. Items: cell ``i``
(0-8, row by row) holding ``x``, ``o`` or blank is item ``3·i + 1``, ``3·i + 2`` or ``3·i + 3``;
the class "x wins" is item 28, anything else 29. Ten attributes, one item each per row.
"""

from __future__ import annotations

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def _winner(board: tuple[int, ...]) -> int:
    for a, b, c in LINES:
        if board[a] != 2 and board[a] == board[b] == board[c]:
            return board[a]
    return -1


def endgame_boards() -> list[tuple[int, ...]]:
    """The end-game boards (cells 0 = x, 1 = o, 2 = blank), sorted."""
    seen: set[tuple[int, ...]] = set()
    out: set[tuple[int, ...]] = set()

    def play(board: tuple[int, ...], player: int) -> None:
        if board in seen:
            return
        seen.add(board)
        if _winner(board) >= 0 or 2 not in board:
            out.add(board)
            return
        for i, v in enumerate(board):
            if v == 2:
                play(board[:i] + (player,) + board[i + 1 :], 1 - player)

    play((2,) * 9, 0)
    return sorted(out)


def tictactoe_rows() -> list[list[int]]:
    """The 958 end-game boards as transactions (see the module docstring)."""
    rows = []
    for board in endgame_boards():
        items = [3 * i + v + 1 for i, v in enumerate(board)]
        rows.append(items + [28 if _winner(board) == 0 else 29])
    return rows
