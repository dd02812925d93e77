"""llama.cpp's GBNF as llguidance's Lark: llguidance's converter, with one fix-up. Grammar.from_gbnf calls it.

The converter makes a lexeme of every rule made of terminals only, and llguidance's lexer takes the longest
match of a lexeme, where GBNF tries every way. A lexeme that may end in optional white space therefore swallows
a character the grammar needs after it: in llama.cpp's arithmetic.gbnf, `num ::= [0-9]+ ws` with
`ws ::= [ \\t\\n]*` eats the new line that `root ::= (expr "=" ws term "\\n")+` must end with, and the grammar
can never complete. So a rule that may match nothing is kept a grammar rule, matched every way, and so are the
rules that use it; within those, each run of terminals that must match something stays one lexeme, so the
masks cost what they did (docs/grammars.md).
"""

from __future__ import annotations

import itertools

from llguidance import gbnf_to_lark as converter
from llguidance.gbnf_to_lark import (AlternativeNode, ASTNode, LiteralNode, RegexNode, RepetitionNode, RuleNode,
                                     RuleRefNode, SequenceNode)


def gbnf_as_lark(text: str) -> str:
    """Lark for llguidance; raises the converter's errors (GbnfToLarkError or Exception) for invalid GBNF."""
    rules = converter.GrammarParser().parse(text)
    converter.resolve(rules)  # marks the terminal-only rules as lexemes, names them in upper case
    empty = _rules_matching_nothing(rules)
    unmarked = _unmark_lexemes(rules, empty)
    for rule in unmarked:
        rule.alternatives = _runs_as_lexemes(rules, rule, rule.alternatives, empty)
    for rule in unmarked:  # once `empty` is no longer read: it holds the names before
        _rename(rules, rule, rule.name.lower())
    ordered = sorted(rules.values(), key=lambda rule: (rule.order, rule.rule_is_terminal))  # a rule, its lexemes
    return "%llguidance {}\n\n" + "\n\n".join(str(rule) for rule in ordered) + "\n"


def _rules_matching_nothing(rules: dict[str, RuleNode]) -> set[str]:
    empty: set[str] = set()
    while True:
        grown = {name for name, rule in rules.items() if _may_be_empty(rule.alternatives, empty)} - empty
        if not grown:
            return empty
        empty |= grown


def _may_be_empty(node: ASTNode, empty: set[str]) -> bool:
    if isinstance(node, LiteralNode):
        return node.value == ""
    if isinstance(node, RuleRefNode):
        return node.target.name in empty
    if isinstance(node, RepetitionNode):
        return node.min_times == 0 or _may_be_empty(node.node, empty)
    if isinstance(node, SequenceNode):
        return all(_may_be_empty(part, empty) for part in node.nodes)
    if isinstance(node, AlternativeNode):
        return any(_may_be_empty(choice, empty) for choice in node.alternatives)
    return False  # a character class or any character


def _unmark_lexemes(rules: dict[str, RuleNode], empty: set[str]) -> list[RuleNode]:
    """Makes grammar rules of the lexemes that may match nothing and of those that use them; returns them."""
    unmarked = [rule for rule in rules.values() if rule.rule_is_terminal and rule.name in empty]
    for rule in unmarked:
        rule.rule_is_terminal = False
    while using := [rule for rule in rules.values() if rule.rule_is_terminal and not rule.alternatives.is_terminal()]:
        for rule in using:
            rule.rule_is_terminal = False
        unmarked += using
    return unmarked


def _runs_as_lexemes(rules: dict[str, RuleNode], owner: RuleNode, node: ASTNode, empty: set[str]) -> ASTNode:
    """node with each terminal part, and each run of terminal parts in a sequence, that must match something
    made one lexeme; what may match nothing stays a grammar rule's part, matched every way."""
    if node.is_terminal() and not _may_be_empty(node, empty):
        return _lexeme(rules, owner, [node])
    if isinstance(node, RepetitionNode):
        node.node = _runs_as_lexemes(rules, owner, node.node, empty)
    elif isinstance(node, AlternativeNode):
        node.alternatives = [_runs_as_lexemes(rules, owner, choice, empty) for choice in node.alternatives]
    elif isinstance(node, SequenceNode):
        parts: list[ASTNode] = []
        for is_terminal, run in itertools.groupby(node.nodes, key=lambda part: part.is_terminal()):
            run = list(run)
            if is_terminal and not all(_may_be_empty(part, empty) for part in run):
                parts.append(_lexeme(rules, owner, run))
            else:
                parts += [_runs_as_lexemes(rules, owner, part, empty) for part in run]
        node.nodes = parts
    return node


def _lexeme(rules: dict[str, RuleNode], owner: RuleNode, parts: list[ASTNode]) -> ASTNode:
    if len(parts) == 1 and isinstance(parts[0], (LiteralNode, RegexNode, RuleRefNode)):
        return parts[0]  # a lexeme already
    name = next(name for k in itertools.count(1) if (name := f"{owner.name.upper()}_{k}") not in rules)
    rule = RuleNode(name, parts[0] if len(parts) == 1 else SequenceNode(parts), "", rule_is_terminal=True)
    rule.order = owner.order
    rules[name] = rule
    return RuleRefNode(name, rule)


def _rename(rules: dict[str, RuleNode], rule: RuleNode, name: str) -> None:
    """Rule references print their target's name, so renaming the rule renames them."""
    name = next(candidate for k in itertools.count() if (candidate := f"{name}_{k}" if k else name) not in rules)
    del rules[rule.name]
    rule.name = name
    rules[name] = rule
