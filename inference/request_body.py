"""The body of ``POST /api/v1/infer``: what a client may send, read into the pipeline's request fields.

``InferRequestSerializer`` is the contract, with a field message for everything it refuses.
``plain_infer_request`` reads the common plain request without building a serializer (speed); where it
answers, its answer is the serializer's. ``infer_body_read`` is what a door calls: the validated fields,
or the ``RuleViolation`` naming each refused field.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from arg_platform.errors import RuleViolation, Violation
from arg_platform.storable_text import UNSTORABLE_RE, unstorable_paths
from inference.actions.checks import confirmed
from inference.steps.envelope import MAX_PROMPT_CHARS


class ContextSerializer(serializers.Serializer):
    role = serializers.CharField(max_length=63, required=False, allow_null=True)
    product = serializers.CharField(
        max_length=120,
        required=False,
        allow_null=True,
        help_text="the product the request is about: when the release's nodes declare products, only nodes "
        "of this product or of none are routed to; an undeclared product is a 400 (request.product_unknown)",
    )
    channel = serializers.CharField(max_length=40, required=False, allow_null=True)
    language = serializers.CharField(max_length=16, required=False, allow_null=True)
    history = serializers.ListField(
        child=serializers.CharField(max_length=2000), required=False, max_length=20
    )
    timestamp = serializers.DateTimeField(required=False, allow_null=True)
    session_id = serializers.CharField(max_length=128, required=False, allow_null=True)
    typology = serializers.CharField(
        max_length=63,
        required=False,
        allow_null=True,
        help_text="the context typology: its response_style shapes the answer (outcome.response_style)",
    )
    user_id = serializers.CharField(max_length=128, required=False, allow_null=True)


@extend_schema_field({"type": "string", "maxLength": MAX_PROMPT_CHARS})
class PromptField(serializers.CharField):
    """A prompt as sent: a JSON string of at most ``MAX_PROMPT_CHARS`` (4,000) characters — the one limit
    of the schema, this serializer, the envelope and the browser's form.

    Anything but a string (a number, a list, an object, a boolean) is refused with a field message,
    where DRF's ``CharField`` would turn a number into text. The length, NUL and other binary content
    reach the envelope, which refuses them with its own rules (``request.prompt_size``,
    ``request.prompt_binary``; DRF's checks would hide them): the schema states the limit itself."""

    default_error_messages = {"not_text": "the prompt must be text (a JSON string), not {kind}"}

    def __init__(self, **kwargs: Any) -> None:  # CharField's keyword arguments, passed through
        super().__init__(**kwargs)
        self.validators = [
            v
            for v in self.validators
            if type(v).__name__ not in ("ProhibitNullCharactersValidator", "MaxLengthValidator")
        ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_text", kind=_JSON_KINDS.get(type(data), type(data).__name__))
        return str(super().to_internal_value(data))


_JSON_KINDS = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}


def _parameters_checked(value: Any) -> None:
    """Action parameters are stored with the request's log row and the action's outcome: no NUL or
    lone surrogate characters, as for every text field."""
    if next(unstorable_paths(value), None) is not None:
        raise serializers.ValidationError("Null characters and lone surrogates are not allowed.")


class DisambiguationSerializer(serializers.Serializer):
    """The answer to an earlier request's "Do you mean X or Y?" (``inference.steps.clarification``)."""

    request_id = serializers.CharField(max_length=64, help_text="the request that asked")
    choice = serializers.CharField(max_length=200, help_text="an option's LabelID or its name")


class InferRequestSerializer(serializers.Serializer):
    prompt = PromptField(max_length=MAX_PROMPT_CHARS, allow_blank=True, trim_whitespace=False)
    # a declared field (DRF collects it), not Field.context
    context = ContextSerializer(required=False)  # type: ignore[assignment]
    parameters = serializers.DictField(
        required=False, help_text="Action parameters, when known", validators=[_parameters_checked]
    )
    dry_run = serializers.BooleanField(required=False, default=False)
    confirm = serializers.BooleanField(
        required=False,
        help_text="confirms an action that asked for confirmation; the same as parameters.confirm "
        "(a request giving both with different values is refused)",
    )
    idempotency_key = serializers.CharField(max_length=128, required=False, allow_blank=True)
    disambiguation = DisambiguationSerializer(
        required=False,
        help_text='answers the "Do you mean X or Y?" of an earlier request: this one is answered for '
        "the chosen label (send the prompt the question was about)",
    )


def _max_length(field: serializers.Field) -> int:
    """The ``max_length`` a declared CharField or ListField sets (every one read below sets it)."""
    if not isinstance(field, serializers.CharField | serializers.ListField) or field.max_length is None:
        raise TypeError(f"{field!r} declares no max_length")
    return field.max_length


def _child(field: serializers.Field) -> serializers.Field:
    if not isinstance(field, serializers.ListField):
        raise TypeError(f"{field!r} is not a ListField")
    return field.child


_CONTEXT_CHARS = {
    name: _max_length(field)
    for name, field in ContextSerializer._declared_fields.items()
    if type(field) is serializers.CharField
}
_HISTORY = ContextSerializer._declared_fields["history"]
_HISTORY_ITEMS, _HISTORY_ITEM_CHARS = _max_length(_HISTORY), _max_length(_child(_HISTORY))
_TOP_KEYS = frozenset(InferRequestSerializer._declared_fields)
_PROMPT_CHARS = _max_length(InferRequestSerializer._declared_fields["prompt"])
_KEY_CHARS = _max_length(InferRequestSerializer._declared_fields["idempotency_key"])


def _plain_text(value: Any, limit: int) -> str | None:
    """A CharField value (whitespace trimmed) when it is a plain, non-blank string within ``limit``."""
    if type(value) is not str or UNSTORABLE_RE.search(value):
        return None
    value = value.strip()
    return value if value and len(value) <= limit else None


def plain_infer_request(data: Any) -> dict[str, Any] | None:
    """``InferRequestSerializer(data=data).validated_data`` for a plain request, or ``None``.

    DRF builds a serializer by deep-copying every declared field, which costs about a quarter of a
    millisecond per request, a tenth of what the endpoint adds to the embedding. A client app's request
    is almost always plain: a JSON object of the declared keys holding strings, a list of strings, a
    boolean and a flat parameter object. This reads such a request directly; anything else — a missing
    or blank value, another type, a timestamp, an unknown key, a value over its limit, a NUL or
    surrogate character, a continuation's ``disambiguation`` — returns ``None`` and the serializer
    decides, with its own field messages.
    The two agree wherever this answers (``tests/inference/test_plain_request.py`` checks it on
    generated requests), and the limits are read from the serializers above, never repeated.
    """
    if type(data) is not dict or not data.keys() <= _TOP_KEYS or "disambiguation" in data:
        return None  # a continuation is rare: the serializer reads it
    prompt = data.get("prompt")
    if type(prompt) is not str or len(prompt) > _PROMPT_CHARS or UNSTORABLE_RE.search(prompt):
        return None
    valid: dict[str, Any] = {"prompt": prompt}
    if "context" in data:
        context = data["context"]
        if type(context) is not dict:
            return None
        plain: dict[str, Any] = {}
        for name, value in context.items():
            if name in _CONTEXT_CHARS:
                if value is not None:
                    value = _plain_text(value, _CONTEXT_CHARS[name])
                    if value is None:
                        return None
            elif name == "history":
                if type(value) is not list or len(value) > _HISTORY_ITEMS:
                    return None
                value = [_plain_text(item, _HISTORY_ITEM_CHARS) for item in value]
                if None in value:
                    return None
            else:  # the timestamp (parsed by DRF) or a key the serializer ignores
                return None
            plain[name] = value
        valid["context"] = plain
    if "parameters" in data:
        parameters = data["parameters"]
        if type(parameters) is not dict or next(unstorable_paths(parameters), None) is not None:
            return None
        valid["parameters"] = dict(parameters)
    dry_run = data.get("dry_run", False)
    if type(dry_run) is not bool:
        return None
    valid["dry_run"] = dry_run
    if "confirm" in data:
        if type(data["confirm"]) is not bool:
            return None
        valid["confirm"] = data["confirm"]
    if "idempotency_key" in data:
        key = data["idempotency_key"]
        if type(key) is not str or UNSTORABLE_RE.search(key):
            return None
        key = key.strip()
        if len(key) > _KEY_CHARS:
            return None
        valid["idempotency_key"] = key
    return valid


def _violation(errors: dict[str, Any]) -> RuleViolation:
    violations = []
    for name, messages in errors.items():
        text = "; ".join(str(m) for m in (messages if isinstance(messages, list) else [messages]))
        violations.append(Violation(f"request.{name}", f"{name}: {text}", name))
    return RuleViolation(violations)


def infer_body_read(data: Any) -> dict[str, Any] | RuleViolation:
    """The validated fields of a request body (``data``: the parsed JSON, ``None`` when it was not JSON),
    or the violation naming each refused field (``request.<field>``; a body that is no JSON object is
    refused as ``request.body``)."""
    valid = plain_infer_request(data)
    if valid is None:
        if not isinstance(data, dict):
            return _violation({"body": ["send a JSON object"]})
        serializer = InferRequestSerializer(data=data)
        if not serializer.is_valid():
            return _violation(serializer.errors)
        valid = dict(serializer.validated_data)
    return _confirm_merged(valid)


def _confirm_merged(valid: dict[str, Any]) -> dict[str, Any] | RuleViolation:
    """A top-level ``confirm`` moved into ``parameters`` (where the action step reads it); refused as
    ``request.confirm`` when ``parameters.confirm`` says otherwise."""
    if "confirm" not in valid:
        return valid
    confirm = valid.pop("confirm")
    parameters = dict(valid.get("parameters") or {})
    if "confirm" in parameters and confirmed(parameters) != confirm:
        return _violation(
            {
                "confirm": [
                    f"is {str(confirm).lower()} but parameters.confirm is {parameters['confirm']!r}; send one"
                ]
            }
        )
    parameters["confirm"] = confirm
    valid["parameters"] = parameters
    return valid
