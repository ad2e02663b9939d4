"""Count the words of a text (the example roadmap's project: docs/roadmap.md)."""

import sys


def count_words(text: str) -> int:
    # the bug phase p1.1 fixes: a text without a trailing newline loses its last word
    return text.count(" ") + text.count("\n")


def main(argv: list[str]) -> int:
    text = sys.stdin.read()
    print(f"words: {count_words(text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
