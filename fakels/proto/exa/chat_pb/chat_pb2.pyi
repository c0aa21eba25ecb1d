import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as _codeium_common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatMessageSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHAT_MESSAGE_SOURCE_UNSPECIFIED: _ClassVar[ChatMessageSource]
    CHAT_MESSAGE_SOURCE_USER: _ClassVar[ChatMessageSource]
    CHAT_MESSAGE_SOURCE_SYSTEM: _ClassVar[ChatMessageSource]
    CHAT_MESSAGE_SOURCE_UNKNOWN: _ClassVar[ChatMessageSource]
CHAT_MESSAGE_SOURCE_UNSPECIFIED: ChatMessageSource
CHAT_MESSAGE_SOURCE_USER: ChatMessageSource
CHAT_MESSAGE_SOURCE_SYSTEM: ChatMessageSource
CHAT_MESSAGE_SOURCE_UNKNOWN: ChatMessageSource

class IntentGeneric(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ChatMessageIntent(_message.Message):
    __slots__ = ("generic",)
    GENERIC_FIELD_NUMBER: _ClassVar[int]
    generic: IntentGeneric
    def __init__(self, generic: _Optional[_Union[IntentGeneric, _Mapping]] = ...) -> None: ...

class ActionGeneric(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ChatMessageAction(_message.Message):
    __slots__ = ("generic",)
    GENERIC_FIELD_NUMBER: _ClassVar[int]
    generic: ActionGeneric
    def __init__(self, generic: _Optional[_Union[ActionGeneric, _Mapping]] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("message_id", "source", "timestamp", "conversation_id", "intent", "action")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    source: ChatMessageSource
    timestamp: _timestamp_pb2.Timestamp
    conversation_id: str
    intent: ChatMessageIntent
    action: ChatMessageAction
    def __init__(self, message_id: _Optional[str] = ..., source: _Optional[_Union[ChatMessageSource, str]] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., conversation_id: _Optional[str] = ..., intent: _Optional[_Union[ChatMessageIntent, _Mapping]] = ..., action: _Optional[_Union[ChatMessageAction, _Mapping]] = ...) -> None: ...

class RawChatMessage(_message.Message):
    __slots__ = ("text", "in_progress", "is_error")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    text: str
    in_progress: bool
    is_error: bool
    def __init__(self, text: _Optional[str] = ..., in_progress: _Optional[bool] = ..., is_error: _Optional[bool] = ...) -> None: ...

class RawGetChatMessageRequest(_message.Message):
    __slots__ = ("metadata", "chat_messages", "system_prompt_override", "chat_model", "chat_model_name")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CHAT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    CHAT_MODEL_FIELD_NUMBER: _ClassVar[int]
    CHAT_MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    chat_messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    system_prompt_override: str
    chat_model: _codeium_common_pb2.Model
    chat_model_name: str
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ..., chat_messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., system_prompt_override: _Optional[str] = ..., chat_model: _Optional[_Union[_codeium_common_pb2.Model, str]] = ..., chat_model_name: _Optional[str] = ...) -> None: ...

class RawGetChatMessageResponse(_message.Message):
    __slots__ = ("delta_message",)
    DELTA_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    delta_message: RawChatMessage
    def __init__(self, delta_message: _Optional[_Union[RawChatMessage, _Mapping]] = ...) -> None: ...
