"""Expression parameters as DynamoDB reads them: never beside the legacy
parameters they replace, placeholders all defined and all used, and
projection paths with list indexes (a[1], #m.#n[0][2]) resolved."""

import re

from moto.dynamodb.comparisons import create_condition_expression_parser
from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords
from moto.dynamodb.responses import ProjectionExpressionParser

EXPRESSIONS = ("UpdateExpression", "ConditionExpression", "ProjectionExpression",
               "KeyConditionExpression", "FilterExpression")
LEGACY = ("AttributeUpdates", "Expected", "ConditionalOperator", "AttributesToGet",
          "KeyConditions", "QueryFilter", "ScanFilter")
_NAME_REF = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_REF = re.compile(r":[A-Za-z0-9_]+")
_RESERVED = frozenset(ReservedKeywords.get_reserved_keywords())


def problems() -> list:
    found = []
    if not callable(getattr(ProjectionExpressionParser, "parse", None)):
        found.append("ProjectionExpressionParser.parse is gone")
    if not callable(getattr(Item, "project", None)):
        found.append("Item.project is gone")
    return found


def check(params: dict, expression_members) -> None:
    """The rules for one request, or one action of a transaction, whose
    expression parameters are expression_members."""
    expressions = [n for n in EXPRESSIONS if n in params]
    legacy = [n for n in LEGACY if n in params]
    if expressions and legacy:
        raise MockValidationException(
            "Can not use both expression and non-expression parameters in the same request: "
            f"Non-expression parameters: {{{', '.join(legacy)}}} "
            f"Expression parameters: {{{', '.join(expressions)}}}"
        )
    for name in expressions:
        if not params[name].strip():
            raise MockValidationException(f"Invalid {name}: The expression can not be empty;")
    names = params.get("ExpressionAttributeNames")
    values = params.get("ExpressionAttributeValues")
    if names is not None and not expressions:
        raise MockValidationException("ExpressionAttributeNames can only be specified when using expressions")
    if values is not None and not expressions:
        null = " and ".join(n for n in EXPRESSIONS if n in expression_members and n != "ProjectionExpression")
        verb = "are" if " and " in null else "is"
        raise MockValidationException(f"ExpressionAttributeValues can only be specified when using expressions: {null} {verb} null")
    if names is not None and not names:
        raise MockValidationException("ExpressionAttributeNames must not be empty")
    if values is not None and not values:
        raise MockValidationException("ExpressionAttributeValues must not be empty")
    used_names, used_values = set(), set()
    for name in expressions:
        refs = _NAME_REF.findall(params[name])
        used_names.update(refs)
        missing = next((r for r in refs if r not in (names or {})), None)
        if missing:
            _syntax_first(params, expressions)
            raise MockValidationException(f"Invalid {name}: An expression attribute name used in the document "
                                          f"path is not defined; attribute name: {missing}")
        refs = _VALUE_REF.findall(params[name])
        used_values.update(refs)
        missing = next((r for r in refs if r not in (values or {})), None)
        if missing:
            _syntax_first(params, expressions)
            raise MockValidationException(f"Invalid {name}: An expression attribute value used in expression "
                                          f"is not defined; attribute value: {missing}")
    for kind, given, used in (("Names", names, used_names), ("Values", values, used_values)):
        unused = [k for k in given or () if k not in used]
        if unused:
            _syntax_first(params, expressions)
            raise MockValidationException(
                f"Value provided in ExpressionAttribute{kind} unused in expressions: keys: {{{', '.join(unused)}}}"
            )


def _syntax_first(params: dict, expressions) -> None:
    """DynamoDB reports an expression's syntax error before its placeholders:
    parsed only on the way to a placeholder error, as moto parses them
    again."""
    for name in expressions:
        text = params[name]
        # Every placeholder defined, so that only the syntax is judged.
        names = {ref: ref for ref in _NAME_REF.findall(text)}
        values = {ref: {"S": ""} for ref in _VALUE_REF.findall(text)}
        try:
            if name == "UpdateExpression":
                UpdateExpressionParser.make(text)
            elif name == "ProjectionExpression":
                parse_projection(text, names)
            elif name in ("ConditionExpression", "FilterExpression"):
                create_condition_expression_parser(text, names, values).parse()
        except MockValidationException:
            raise
        except Exception:  # moto's parser failing otherwise: the placeholder error stands
            return


class Path(tuple):
    """A document path: attribute names (str) and list indexes (int)."""

    def __str__(self):
        return "[" + ", ".join(f"[{e}]" if isinstance(e, int) else e for e in self) + "]"


_TOKEN = re.compile(r"\s*(?:(#[A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_]*)|\[\s*(\d+)\s*\]|(\.)|(,)|(\S))")


def parse_projection(expression: str, names) -> tuple:
    """The paths of a ProjectionExpression and the placeholders it used."""
    names = names or {}
    if not expression.strip():
        raise _invalid_projection("The expression can not be empty;")
    paths, used, path, expect_element = [], [], [], True
    pos = 0
    while pos < len(expression.rstrip()):
        m = _TOKEN.match(expression, pos)
        placeholder, name, index, dot, comma, other = m.groups()
        token = m.group(0).strip()
        if other is not None or (expect_element and (index or dot or comma)) or \
                (not expect_element and (placeholder or name)):
            raise _invalid_projection(f'Syntax error; token: "{token}", near: "{expression[m.start(0):m.end(0) + 1].strip()}"')
        pos = m.end(0)
        if placeholder:
            if placeholder not in names:
                raise _invalid_projection("An expression attribute name used in the document path is not defined; "
                                          f"attribute name: {placeholder}")
            used.append(placeholder)
            path.append(names[placeholder])
            expect_element = False
        elif name:
            if name.upper() in _RESERVED:
                raise _invalid_projection(f"Attribute name is a reserved keyword; reserved keyword: {name}")
            path.append(name)
            expect_element = False
        elif index is not None:
            path.append(int(index))
        elif dot:
            expect_element = True
        else:  # a comma ends a path
            paths.append(Path(path))
            path, expect_element = [], True
    if expect_element:
        raise _invalid_projection('Syntax error; token: "<EOF>", near: "' + expression.rstrip()[-1:] + '"')
    paths.append(Path(path))
    _no_overlap(paths)
    return paths, used


def _no_overlap(paths) -> None:
    for i, one in enumerate(paths):
        for two in paths[i + 1:]:
            n = min(len(one), len(two))
            common = next((k for k in range(n) if one[k] != two[k]), n)
            if common == n:
                raise _invalid_projection("Two document paths overlap with each other; must remove or rewrite one "
                                          f"of these paths; path one: {one}, path two: {two}")
            if isinstance(one[common], int) != isinstance(two[common], int):
                raise _invalid_projection("Two document paths conflict with each other; must remove or rewrite one "
                                          f"of these paths; path one: {one}, path two: {two}")


def _invalid_projection(reason: str) -> MockValidationException:
    return MockValidationException(f"Invalid ProjectionExpression: {reason}")


def project(item: Item, paths) -> Item:
    """The item holding only what paths name: maps keep the named keys, lists
    the named elements, in index order."""
    tree = {}
    for path in paths:
        value = _resolve(item.attrs, path)
        if value is None:
            continue  # a path the item does not have projects nothing
        node = tree
        for element in path[:-1]:
            node = node.setdefault(element, {})
        node[path[-1]] = value
    return Item(hash_key=item.hash_key, range_key=item.range_key, attrs={k: _built(v) for k, v in tree.items()})


def _resolve(attrs: dict, path):
    here = attrs.get(path[0])
    for element in path[1:]:
        if here is None:
            return None
        if isinstance(element, int):
            here = here.value[element] if here.is_list() and element < len(here.value) else None
        else:
            here = here.value.get(element) if here.is_map() else None
    return here


def _built(node):
    if isinstance(node, DynamoType):
        return node
    if node and all(isinstance(k, int) for k in node):
        return DynamoType({"L": [_built(node[k]) for k in sorted(node)]})
    return DynamoType({"M": {k: _built(v) for k, v in node.items()}})


def install() -> None:
    """Projections through moto's GetItem, Query, Scan and BatchGetItem use
    these paths; moto's own parser leaves a placeholder with an index
    (#l[1]) unresolved and refuses the request."""

    def parse(self):
        if not self.projection_expression:
            return []
        paths, used = parse_projection(self.projection_expression, self.expression_attribute_names)
        self.expr_attr_names_found.extend(used)
        return paths

    ProjectionExpressionParser.parse = parse
    original_project = Item.project

    def item_project(self, projection_expressions):
        if projection_expressions and isinstance(projection_expressions[0], Path):
            return project(self, projection_expressions)
        return original_project(self, projection_expressions)

    Item.project = item_project
