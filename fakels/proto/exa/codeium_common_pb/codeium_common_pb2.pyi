import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Model(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_UNSPECIFIED: _ClassVar[Model]
    MODEL_CLAUDE_4_SONNET: _ClassVar[Model]
    MODEL_PRIVATE_2: _ClassVar[Model]

class ModelAlias(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_ALIAS_UNSPECIFIED: _ClassVar[ModelAlias]

class ConversationalPlannerMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONVERSATIONAL_PLANNER_MODE_UNSPECIFIED: _ClassVar[ConversationalPlannerMode]
    CONVERSATIONAL_PLANNER_MODE_DEFAULT: _ClassVar[ConversationalPlannerMode]
    CONVERSATIONAL_PLANNER_MODE_READ_ONLY: _ClassVar[ConversationalPlannerMode]
    CONVERSATIONAL_PLANNER_MODE_NO_TOOL: _ClassVar[ConversationalPlannerMode]
    CONVERSATIONAL_PLANNER_MODE_EXPLORE: _ClassVar[ConversationalPlannerMode]
    CONVERSATIONAL_PLANNER_MODE_PLANNING: _ClassVar[ConversationalPlannerMode]
    CONVERSATIONAL_PLANNER_MODE_AUTO: _ClassVar[ConversationalPlannerMode]

class TeamsTier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEAMS_TIER_UNSPECIFIED: _ClassVar[TeamsTier]
MODEL_UNSPECIFIED: Model
MODEL_CLAUDE_4_SONNET: Model
MODEL_PRIVATE_2: Model
MODEL_ALIAS_UNSPECIFIED: ModelAlias
CONVERSATIONAL_PLANNER_MODE_UNSPECIFIED: ConversationalPlannerMode
CONVERSATIONAL_PLANNER_MODE_DEFAULT: ConversationalPlannerMode
CONVERSATIONAL_PLANNER_MODE_READ_ONLY: ConversationalPlannerMode
CONVERSATIONAL_PLANNER_MODE_NO_TOOL: ConversationalPlannerMode
CONVERSATIONAL_PLANNER_MODE_EXPLORE: ConversationalPlannerMode
CONVERSATIONAL_PLANNER_MODE_PLANNING: ConversationalPlannerMode
CONVERSATIONAL_PLANNER_MODE_AUTO: ConversationalPlannerMode
TEAMS_TIER_UNSPECIFIED: TeamsTier

class Metadata(_message.Message):
    __slots__ = ("ide_name", "extension_version", "api_key", "locale", "os", "disable_telemetry", "ide_version", "hardware", "request_id", "session_id", "extension_name", "user_jwt")
    IDE_NAME_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_VERSION_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    DISABLE_TELEMETRY_FIELD_NUMBER: _ClassVar[int]
    IDE_VERSION_FIELD_NUMBER: _ClassVar[int]
    HARDWARE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_NAME_FIELD_NUMBER: _ClassVar[int]
    USER_JWT_FIELD_NUMBER: _ClassVar[int]
    ide_name: str
    extension_version: str
    api_key: str
    locale: str
    os: str
    disable_telemetry: bool
    ide_version: str
    hardware: str
    request_id: int
    session_id: str
    extension_name: str
    user_jwt: str
    def __init__(self, ide_name: _Optional[str] = ..., extension_version: _Optional[str] = ..., api_key: _Optional[str] = ..., locale: _Optional[str] = ..., os: _Optional[str] = ..., disable_telemetry: _Optional[bool] = ..., ide_version: _Optional[str] = ..., hardware: _Optional[str] = ..., request_id: _Optional[int] = ..., session_id: _Optional[str] = ..., extension_name: _Optional[str] = ..., user_jwt: _Optional[str] = ...) -> None: ...

class PathScopeItem(_message.Message):
    __slots__ = ("absolute_uri",)
    ABSOLUTE_URI_FIELD_NUMBER: _ClassVar[int]
    absolute_uri: str
    def __init__(self, absolute_uri: _Optional[str] = ...) -> None: ...

class ContextScopeItem(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TextOrScopeItem(_message.Message):
    __slots__ = ("text", "item")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    text: str
    item: ContextScopeItem
    def __init__(self, text: _Optional[str] = ..., item: _Optional[_Union[ContextScopeItem, _Mapping]] = ...) -> None: ...

class ImageData(_message.Message):
    __slots__ = ("base64_data", "mime_type", "caption")
    BASE64_DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    CAPTION_FIELD_NUMBER: _ClassVar[int]
    base64_data: str
    mime_type: str
    caption: str
    def __init__(self, base64_data: _Optional[str] = ..., mime_type: _Optional[str] = ..., caption: _Optional[str] = ...) -> None: ...

class ModelOrAlias(_message.Message):
    __slots__ = ("model", "alias", "model_uid")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    MODEL_UID_FIELD_NUMBER: _ClassVar[int]
    model: Model
    alias: ModelAlias
    model_uid: str
    def __init__(self, model: _Optional[_Union[Model, str]] = ..., alias: _Optional[_Union[ModelAlias, str]] = ..., model_uid: _Optional[str] = ...) -> None: ...

class ModelUsageStats(_message.Message):
    __slots__ = ("model_deprecated", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "api_provider", "message_id", "response_header", "model_uid")
    MODEL_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    API_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_HEADER_FIELD_NUMBER: _ClassVar[int]
    MODEL_UID_FIELD_NUMBER: _ClassVar[int]
    model_deprecated: Model
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    api_provider: str
    message_id: str
    response_header: str
    model_uid: str
    def __init__(self, model_deprecated: _Optional[_Union[Model, str]] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., api_provider: _Optional[str] = ..., message_id: _Optional[str] = ..., response_header: _Optional[str] = ..., model_uid: _Optional[str] = ...) -> None: ...

class ChatToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments_json", "invalid_json_str", "invalid_json_err")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    INVALID_JSON_STR_FIELD_NUMBER: _ClassVar[int]
    INVALID_JSON_ERR_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    invalid_json_str: str
    invalid_json_err: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., invalid_json_str: _Optional[str] = ..., invalid_json_err: _Optional[str] = ...) -> None: ...

class KnowledgeBaseMarkdownChunk(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class KnowledgeBaseChunk(_message.Message):
    __slots__ = ("text", "markdown_chunk")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_CHUNK_FIELD_NUMBER: _ClassVar[int]
    text: str
    markdown_chunk: KnowledgeBaseMarkdownChunk
    def __init__(self, text: _Optional[str] = ..., markdown_chunk: _Optional[_Union[KnowledgeBaseMarkdownChunk, _Mapping]] = ...) -> None: ...

class KnowledgeBaseItem(_message.Message):
    __slots__ = ("text", "chunks", "summary")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    text: str
    chunks: _containers.RepeatedCompositeFieldContainer[KnowledgeBaseChunk]
    summary: str
    def __init__(self, text: _Optional[str] = ..., chunks: _Optional[_Iterable[_Union[KnowledgeBaseChunk, _Mapping]]] = ..., summary: _Optional[str] = ...) -> None: ...

class AllowedModelConfig(_message.Message):
    __slots__ = ("model_or_alias", "credit_multiplier")
    MODEL_OR_ALIAS_FIELD_NUMBER: _ClassVar[int]
    CREDIT_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    model_or_alias: ModelOrAlias
    credit_multiplier: float
    def __init__(self, model_or_alias: _Optional[_Union[ModelOrAlias, _Mapping]] = ..., credit_multiplier: _Optional[float] = ...) -> None: ...

class PlanInfo(_message.Message):
    __slots__ = ("teams_tier", "plan_name", "monthly_prompt_credits", "monthly_flow_credits", "is_enterprise", "is_teams", "cascade_allowed_models_config", "has_paid_features")
    TEAMS_TIER_FIELD_NUMBER: _ClassVar[int]
    PLAN_NAME_FIELD_NUMBER: _ClassVar[int]
    MONTHLY_PROMPT_CREDITS_FIELD_NUMBER: _ClassVar[int]
    MONTHLY_FLOW_CREDITS_FIELD_NUMBER: _ClassVar[int]
    IS_ENTERPRISE_FIELD_NUMBER: _ClassVar[int]
    IS_TEAMS_FIELD_NUMBER: _ClassVar[int]
    CASCADE_ALLOWED_MODELS_CONFIG_FIELD_NUMBER: _ClassVar[int]
    HAS_PAID_FEATURES_FIELD_NUMBER: _ClassVar[int]
    teams_tier: TeamsTier
    plan_name: str
    monthly_prompt_credits: int
    monthly_flow_credits: int
    is_enterprise: bool
    is_teams: bool
    cascade_allowed_models_config: _containers.RepeatedCompositeFieldContainer[AllowedModelConfig]
    has_paid_features: bool
    def __init__(self, teams_tier: _Optional[_Union[TeamsTier, str]] = ..., plan_name: _Optional[str] = ..., monthly_prompt_credits: _Optional[int] = ..., monthly_flow_credits: _Optional[int] = ..., is_enterprise: _Optional[bool] = ..., is_teams: _Optional[bool] = ..., cascade_allowed_models_config: _Optional[_Iterable[_Union[AllowedModelConfig, _Mapping]]] = ..., has_paid_features: _Optional[bool] = ...) -> None: ...

class UserStatus(_message.Message):
    __slots__ = ("pro", "name", "team_id", "email", "teams_tier", "used_prompt_credits", "used_flow_credits", "trial_end_time", "max_premium_chat_messages")
    PRO_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    TEAMS_TIER_FIELD_NUMBER: _ClassVar[int]
    USED_PROMPT_CREDITS_FIELD_NUMBER: _ClassVar[int]
    USED_FLOW_CREDITS_FIELD_NUMBER: _ClassVar[int]
    TRIAL_END_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_PREMIUM_CHAT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    pro: bool
    name: str
    team_id: str
    email: str
    teams_tier: TeamsTier
    used_prompt_credits: int
    used_flow_credits: int
    trial_end_time: _timestamp_pb2.Timestamp
    max_premium_chat_messages: int
    def __init__(self, pro: _Optional[bool] = ..., name: _Optional[str] = ..., team_id: _Optional[str] = ..., email: _Optional[str] = ..., teams_tier: _Optional[_Union[TeamsTier, str]] = ..., used_prompt_credits: _Optional[int] = ..., used_flow_credits: _Optional[int] = ..., trial_end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_premium_chat_messages: _Optional[int] = ...) -> None: ...
