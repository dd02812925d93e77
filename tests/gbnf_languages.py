"""Independent recognizers for llama.cpp's context-free grammars/ files (c.gbnf, arithmetic.gbnf), written by
hand from the files: tests check generated text with them, not with the library that constrained it.

A parser maps a start position to the set of positions where a match can end, all of them, so alternatives
and repetitions are tried every way as GBNF means them (no greedy lexing). Reading a cut-off answer, a parser
that meets the end of the text inside a match gives RAN_OUT: the text is the start of something it matches.
Every rule of these files derives some string, so such a start can always be completed.
"""

from __future__ import annotations

import re
from typing import Callable

RAN_OUT = -1

Parser = Callable[["Reading", int], frozenset]


class Reading:
    """One text being read; cut_off: whether it may stop in the middle of a match."""

    def __init__(self, text: str, cut_off: bool):
        self.text, self.cut_off, self.memo = text, cut_off, {}

    def at_end(self, pos: int) -> frozenset:
        return frozenset({RAN_OUT}) if self.cut_off else frozenset()


def lit(word: str) -> Parser:
    def parse(reading: Reading, pos: int) -> frozenset:
        if reading.text.startswith(word, pos):
            return frozenset({pos + len(word)})
        return reading.at_end(pos) if word.startswith(reading.text[pos:]) else frozenset()
    return parse


def char(character_class: str) -> Parser:
    """One character of a regular-expression class, such as "[a-z]" or "[^\\n]"."""
    one = re.compile(character_class)

    def parse(reading: Reading, pos: int) -> frozenset:
        if pos == len(reading.text):
            return reading.at_end(pos)
        return frozenset({pos + 1}) if one.fullmatch(reading.text[pos]) else frozenset()
    return parse


def seq(*parts: Parser) -> Parser:
    def parse(reading: Reading, pos: int) -> frozenset:
        ends = {pos}
        for part in parts:
            ends = {end for start in ends for end in (part(reading, start) if start != RAN_OUT else {RAN_OUT})}
        return frozenset(ends)
    return parse


def alt(*choices: Parser) -> Parser:
    return lambda reading, pos: frozenset().union(*(choice(reading, pos) for choice in choices))


def star(part: Parser) -> Parser:
    def parse(reading: Reading, pos: int) -> frozenset:
        ends, frontier = {pos}, {pos}
        while frontier:
            reached = {end for start in frontier if start != RAN_OUT for end in part(reading, start)}
            frontier = reached - ends
            ends |= reached
        return frozenset(ends)
    return parse


def plus(part: Parser) -> Parser:
    return seq(part, star(part))


def opt(part: Parser) -> Parser:
    return alt(part, lambda reading, pos: frozenset({pos}))


class Rules:
    """GBNF's named rules: `rules.name` refers to a rule defined before or after, matched once per position."""

    def __init__(self):
        object.__setattr__(self, "defined", {})

    def __setattr__(self, name: str, parser: Parser) -> None:
        self.defined[name] = parser

    def __getattr__(self, name: str) -> Parser:
        def parse(reading: Reading, pos: int) -> frozenset:
            key = (name, pos)
            if key not in reading.memo:
                reading.memo[key] = self.defined[name](reading, pos)
            return reading.memo[key]
        return parse


def recognizes(rules: Rules, text: str, cut_off: bool = False) -> bool:
    """Whether text is in the language of rules.root, or with cut_off, whether it starts something in it."""
    reading = Reading(text, cut_off)
    ends = rules.root(reading, 0)
    return len(text) in ends or RAN_OUT in ends


def c_rules() -> Rules:
    """grammars/c.gbnf, rule by rule."""
    r = Rules()
    r.root = star(r.declaration)
    r.declaration = seq(r.dataType, r.identifier, lit("("), opt(r.parameter), lit(")"), lit("{"),
                        star(r.statement), lit("}"))
    r.dataType = alt(seq(lit("int"), r.ws), seq(lit("float"), r.ws), seq(lit("char"), r.ws))
    r.identifier = seq(char("[a-zA-Z_]"), star(char("[a-zA-Z_0-9]")))
    r.parameter = seq(r.dataType, r.identifier)
    r.statement = alt(
        seq(r.dataType, r.identifier, r.ws, lit("="), r.ws, r.expression, lit(";")),
        seq(r.identifier, r.ws, lit("="), r.ws, r.expression, lit(";")),
        seq(r.identifier, r.ws, lit("("), opt(r.argList), lit(")"), lit(";")),
        seq(lit("return"), r.ws, r.expression, lit(";")),
        seq(lit("while"), lit("("), r.condition, lit(")"), lit("{"), star(r.statement), lit("}")),
        seq(lit("for"), lit("("), r.forInit, lit(";"), r.ws, r.condition, lit(";"), r.ws, r.forUpdate, lit(")"),
            lit("{"), star(r.statement), lit("}")),
        seq(lit("if"), lit("("), r.condition, lit(")"), lit("{"), star(r.statement), lit("}"),
            opt(seq(lit("else"), lit("{"), star(r.statement), lit("}")))),
        r.singleLineComment,
        r.multiLineComment)
    r.forInit = alt(seq(r.dataType, r.identifier, r.ws, lit("="), r.ws, r.expression),
                    seq(r.identifier, r.ws, lit("="), r.ws, r.expression))
    r.forUpdate = seq(r.identifier, r.ws, lit("="), r.ws, r.expression)
    r.condition = seq(r.expression, r.relationOperator, r.expression)
    r.relationOperator = alt(*map(lit, ("<=", "<", "==", "!=", ">=", ">")))
    r.expression = seq(r.term, star(seq(alt(lit("+"), lit("-")), r.term)))
    r.term = seq(r.factor, star(seq(alt(lit("*"), lit("/")), r.factor)))
    r.factor = alt(r.identifier, r.number, r.unaryTerm, r.funcCall, r.parenExpression)
    r.unaryTerm = seq(lit("-"), r.factor)
    r.funcCall = seq(r.identifier, lit("("), opt(r.argList), lit(")"))
    r.parenExpression = seq(lit("("), r.ws, r.expression, r.ws, lit(")"))
    r.argList = seq(r.expression, star(seq(lit(","), r.ws, r.expression)))
    r.number = plus(char("[0-9]"))
    r.singleLineComment = seq(lit("//"), star(char("[^\n]")), lit("\n"))
    r.multiLineComment = seq(lit("/*"), star(alt(char("[^*]"), seq(lit("*"), char("[^/]")))), lit("*/"))
    r.ws = plus(char("[ \t\n]"))
    return r


def arithmetic_rules() -> Rules:
    """grammars/arithmetic.gbnf, rule by rule."""
    r = Rules()
    r.root = plus(seq(r.expr, lit("="), r.ws, r.term, lit("\n")))
    r.expr = seq(r.term, star(seq(char("[-+*/]"), r.term)))
    r.term = alt(r.ident, r.num, seq(lit("("), r.ws, r.expr, lit(")"), r.ws))
    r.ident = seq(char("[a-z]"), star(char("[a-z0-9_]")), r.ws)
    r.num = seq(plus(char("[0-9]")), r.ws)
    r.ws = star(char("[ \t\n]"))
    return r
