from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as _codeium_common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CascadeRunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CASCADE_RUN_STATUS_UNSPECIFIED: _ClassVar[CascadeRunStatus]
    CASCADE_RUN_STATUS_IDLE: _ClassVar[CascadeRunStatus]
    CASCADE_RUN_STATUS_RUNNING: _ClassVar[CascadeRunStatus]
    CASCADE_RUN_STATUS_CANCELING: _ClassVar[CascadeRunStatus]
    CASCADE_RUN_STATUS_BUSY: _ClassVar[CascadeRunStatus]

class CortexStepStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_STEP_STATUS_UNSPECIFIED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_PENDING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_RUNNING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_DONE: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_INVALID: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_CLEARED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_CANCELED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_ERROR: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_GENERATING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_WAITING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_HALTED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_SKIPPING: _ClassVar[CortexStepStatus]

class CortexStepType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_STEP_TYPE_UNSPECIFIED: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GREP_SEARCH: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_VIEW_FILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LIST_DIRECTORY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_USER_INPUT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PLANNER_RESPONSE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_WRITE_TO_FILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_ERROR_MESSAGE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RUN_COMMAND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CHECKPOINT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PROPOSE_CODE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FIND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_COMMAND_STATUS: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_URL_CONTENT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SEARCH_WEB: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CUSTOM_TOOL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_MCP_TOOL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TOOL_CALL_CHOICE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GREP_SEARCH_V2: _ClassVar[CortexStepType]

class CortexTrajectorySource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_TRAJECTORY_SOURCE_UNSPECIFIED: _ClassVar[CortexTrajectorySource]
    CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT: _ClassVar[CortexTrajectorySource]

class CortexTrajectoryType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_TRAJECTORY_TYPE_UNSPECIFIED: _ClassVar[CortexTrajectoryType]
    CORTEX_TRAJECTORY_TYPE_USER_MAINLINE: _ClassVar[CortexTrajectoryType]
    CORTEX_TRAJECTORY_TYPE_CASCADE: _ClassVar[CortexTrajectoryType]

class SectionOverrideMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SECTION_OVERRIDE_MODE_UNSPECIFIED: _ClassVar[SectionOverrideMode]
    SECTION_OVERRIDE_MODE_OVERRIDE: _ClassVar[SectionOverrideMode]
    SECTION_OVERRIDE_MODE_APPEND: _ClassVar[SectionOverrideMode]
    SECTION_OVERRIDE_MODE_PREPEND: _ClassVar[SectionOverrideMode]

class ReadUrlContentAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    READ_URL_CONTENT_ACTION_UNSPECIFIED: _ClassVar[ReadUrlContentAction]
    READ_URL_CONTENT_ACTION_ALLOW_ONCE: _ClassVar[ReadUrlContentAction]
    READ_URL_CONTENT_ACTION_REJECT: _ClassVar[ReadUrlContentAction]
    READ_URL_CONTENT_ACTION_ALWAYS_ALLOW_ORIGIN: _ClassVar[ReadUrlContentAction]
CASCADE_RUN_STATUS_UNSPECIFIED: CascadeRunStatus
CASCADE_RUN_STATUS_IDLE: CascadeRunStatus
CASCADE_RUN_STATUS_RUNNING: CascadeRunStatus
CASCADE_RUN_STATUS_CANCELING: CascadeRunStatus
CASCADE_RUN_STATUS_BUSY: CascadeRunStatus
CORTEX_STEP_STATUS_UNSPECIFIED: CortexStepStatus
CORTEX_STEP_STATUS_PENDING: CortexStepStatus
CORTEX_STEP_STATUS_RUNNING: CortexStepStatus
CORTEX_STEP_STATUS_DONE: CortexStepStatus
CORTEX_STEP_STATUS_INVALID: CortexStepStatus
CORTEX_STEP_STATUS_CLEARED: CortexStepStatus
CORTEX_STEP_STATUS_CANCELED: CortexStepStatus
CORTEX_STEP_STATUS_ERROR: CortexStepStatus
CORTEX_STEP_STATUS_GENERATING: CortexStepStatus
CORTEX_STEP_STATUS_WAITING: CortexStepStatus
CORTEX_STEP_STATUS_HALTED: CortexStepStatus
CORTEX_STEP_STATUS_SKIPPING: CortexStepStatus
CORTEX_STEP_TYPE_UNSPECIFIED: CortexStepType
CORTEX_STEP_TYPE_GREP_SEARCH: CortexStepType
CORTEX_STEP_TYPE_VIEW_FILE: CortexStepType
CORTEX_STEP_TYPE_LIST_DIRECTORY: CortexStepType
CORTEX_STEP_TYPE_USER_INPUT: CortexStepType
CORTEX_STEP_TYPE_PLANNER_RESPONSE: CortexStepType
CORTEX_STEP_TYPE_WRITE_TO_FILE: CortexStepType
CORTEX_STEP_TYPE_ERROR_MESSAGE: CortexStepType
CORTEX_STEP_TYPE_RUN_COMMAND: CortexStepType
CORTEX_STEP_TYPE_CHECKPOINT: CortexStepType
CORTEX_STEP_TYPE_PROPOSE_CODE: CortexStepType
CORTEX_STEP_TYPE_FIND: CortexStepType
CORTEX_STEP_TYPE_COMMAND_STATUS: CortexStepType
CORTEX_STEP_TYPE_READ_URL_CONTENT: CortexStepType
CORTEX_STEP_TYPE_SEARCH_WEB: CortexStepType
CORTEX_STEP_TYPE_CUSTOM_TOOL: CortexStepType
CORTEX_STEP_TYPE_MCP_TOOL: CortexStepType
CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL: CortexStepType
CORTEX_STEP_TYPE_TOOL_CALL_CHOICE: CortexStepType
CORTEX_STEP_TYPE_GREP_SEARCH_V2: CortexStepType
CORTEX_TRAJECTORY_SOURCE_UNSPECIFIED: CortexTrajectorySource
CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT: CortexTrajectorySource
CORTEX_TRAJECTORY_TYPE_UNSPECIFIED: CortexTrajectoryType
CORTEX_TRAJECTORY_TYPE_USER_MAINLINE: CortexTrajectoryType
CORTEX_TRAJECTORY_TYPE_CASCADE: CortexTrajectoryType
SECTION_OVERRIDE_MODE_UNSPECIFIED: SectionOverrideMode
SECTION_OVERRIDE_MODE_OVERRIDE: SectionOverrideMode
SECTION_OVERRIDE_MODE_APPEND: SectionOverrideMode
SECTION_OVERRIDE_MODE_PREPEND: SectionOverrideMode
READ_URL_CONTENT_ACTION_UNSPECIFIED: ReadUrlContentAction
READ_URL_CONTENT_ACTION_ALLOW_ONCE: ReadUrlContentAction
READ_URL_CONTENT_ACTION_REJECT: ReadUrlContentAction
READ_URL_CONTENT_ACTION_ALWAYS_ALLOW_ORIGIN: ReadUrlContentAction

class SectionOverrideConfig(_message.Message):
    __slots__ = ("mode", "content")
    MODE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    mode: SectionOverrideMode
    content: str
    def __init__(self, mode: _Optional[_Union[SectionOverrideMode, str]] = ..., content: _Optional[str] = ...) -> None: ...

class CascadeConversationalPlannerConfig(_message.Message):
    __slots__ = ("planner_mode", "test_section_content", "test_section", "tool_calling_section", "code_changes_section", "additional_instructions_section", "communication_section")
    PLANNER_MODE_FIELD_NUMBER: _ClassVar[int]
    TEST_SECTION_CONTENT_FIELD_NUMBER: _ClassVar[int]
    TEST_SECTION_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLING_SECTION_FIELD_NUMBER: _ClassVar[int]
    CODE_CHANGES_SECTION_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_INSTRUCTIONS_SECTION_FIELD_NUMBER: _ClassVar[int]
    COMMUNICATION_SECTION_FIELD_NUMBER: _ClassVar[int]
    planner_mode: _codeium_common_pb2.ConversationalPlannerMode
    test_section_content: str
    test_section: SectionOverrideConfig
    tool_calling_section: SectionOverrideConfig
    code_changes_section: SectionOverrideConfig
    additional_instructions_section: SectionOverrideConfig
    communication_section: SectionOverrideConfig
    def __init__(self, planner_mode: _Optional[_Union[_codeium_common_pb2.ConversationalPlannerMode, str]] = ..., test_section_content: _Optional[str] = ..., test_section: _Optional[_Union[SectionOverrideConfig, _Mapping]] = ..., tool_calling_section: _Optional[_Union[SectionOverrideConfig, _Mapping]] = ..., code_changes_section: _Optional[_Union[SectionOverrideConfig, _Mapping]] = ..., additional_instructions_section: _Optional[_Union[SectionOverrideConfig, _Mapping]] = ..., communication_section: _Optional[_Union[SectionOverrideConfig, _Mapping]] = ...) -> None: ...

class RunCommandToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ViewFileToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDirToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GrepV2ToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FindToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SearchWebToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReadUrlContentToolConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CascadeToolConfig(_message.Message):
    __slots__ = ("find", "run_command", "view_file", "search_web", "list_dir", "tool_allowlist", "grep_v2", "read_url_content")
    FIND_FIELD_NUMBER: _ClassVar[int]
    RUN_COMMAND_FIELD_NUMBER: _ClassVar[int]
    VIEW_FILE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_WEB_FIELD_NUMBER: _ClassVar[int]
    LIST_DIR_FIELD_NUMBER: _ClassVar[int]
    TOOL_ALLOWLIST_FIELD_NUMBER: _ClassVar[int]
    GREP_V2_FIELD_NUMBER: _ClassVar[int]
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    find: FindToolConfig
    run_command: RunCommandToolConfig
    view_file: ViewFileToolConfig
    search_web: SearchWebToolConfig
    list_dir: ListDirToolConfig
    tool_allowlist: _containers.RepeatedScalarFieldContainer[str]
    grep_v2: GrepV2ToolConfig
    read_url_content: ReadUrlContentToolConfig
    def __init__(self, find: _Optional[_Union[FindToolConfig, _Mapping]] = ..., run_command: _Optional[_Union[RunCommandToolConfig, _Mapping]] = ..., view_file: _Optional[_Union[ViewFileToolConfig, _Mapping]] = ..., search_web: _Optional[_Union[SearchWebToolConfig, _Mapping]] = ..., list_dir: _Optional[_Union[ListDirToolConfig, _Mapping]] = ..., tool_allowlist: _Optional[_Iterable[str]] = ..., grep_v2: _Optional[_Union[GrepV2ToolConfig, _Mapping]] = ..., read_url_content: _Optional[_Union[ReadUrlContentToolConfig, _Mapping]] = ...) -> None: ...

class CascadePlannerConfig(_message.Message):
    __slots__ = ("plan_model_deprecated", "conversational", "max_output_tokens", "allow_pending_steps", "tool_config", "requested_model_deprecated", "plan_model_uid", "requested_model_uid")
    PLAN_MODEL_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    CONVERSATIONAL_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_PENDING_STEPS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CONFIG_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    PLAN_MODEL_UID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_UID_FIELD_NUMBER: _ClassVar[int]
    plan_model_deprecated: _codeium_common_pb2.Model
    conversational: CascadeConversationalPlannerConfig
    max_output_tokens: int
    allow_pending_steps: bool
    tool_config: CascadeToolConfig
    requested_model_deprecated: _codeium_common_pb2.ModelOrAlias
    plan_model_uid: str
    requested_model_uid: str
    def __init__(self, plan_model_deprecated: _Optional[_Union[_codeium_common_pb2.Model, str]] = ..., conversational: _Optional[_Union[CascadeConversationalPlannerConfig, _Mapping]] = ..., max_output_tokens: _Optional[int] = ..., allow_pending_steps: _Optional[bool] = ..., tool_config: _Optional[_Union[CascadeToolConfig, _Mapping]] = ..., requested_model_deprecated: _Optional[_Union[_codeium_common_pb2.ModelOrAlias, _Mapping]] = ..., plan_model_uid: _Optional[str] = ..., requested_model_uid: _Optional[str] = ...) -> None: ...

class MemoryConfig(_message.Message):
    __slots__ = ("memory_model_deprecated", "enabled")
    MEMORY_MODEL_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    memory_model_deprecated: bool
    enabled: bool
    def __init__(self, memory_model_deprecated: _Optional[bool] = ..., enabled: _Optional[bool] = ...) -> None: ...

class DynamicBrainUpdateConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BrainUpdateStrategy(_message.Message):
    __slots__ = ("dynamic_update",)
    DYNAMIC_UPDATE_FIELD_NUMBER: _ClassVar[int]
    dynamic_update: DynamicBrainUpdateConfig
    def __init__(self, dynamic_update: _Optional[_Union[DynamicBrainUpdateConfig, _Mapping]] = ...) -> None: ...

class BrainConfig(_message.Message):
    __slots__ = ("enabled", "update_strategy")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    UPDATE_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    update_strategy: BrainUpdateStrategy
    def __init__(self, enabled: _Optional[bool] = ..., update_strategy: _Optional[_Union[BrainUpdateStrategy, _Mapping]] = ...) -> None: ...

class CascadeConfig(_message.Message):
    __slots__ = ("planner_config", "memory_config", "brain_config")
    PLANNER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    MEMORY_CONFIG_FIELD_NUMBER: _ClassVar[int]
    BRAIN_CONFIG_FIELD_NUMBER: _ClassVar[int]
    planner_config: CascadePlannerConfig
    memory_config: MemoryConfig
    brain_config: BrainConfig
    def __init__(self, planner_config: _Optional[_Union[CascadePlannerConfig, _Mapping]] = ..., memory_config: _Optional[_Union[MemoryConfig, _Mapping]] = ..., brain_config: _Optional[_Union[BrainConfig, _Mapping]] = ...) -> None: ...

class CortexErrorDetails(_message.Message):
    __slots__ = ("user_error_message", "short_error", "full_error", "is_benign", "details", "error_id")
    USER_ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SHORT_ERROR_FIELD_NUMBER: _ClassVar[int]
    FULL_ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_BENIGN_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    ERROR_ID_FIELD_NUMBER: _ClassVar[int]
    user_error_message: str
    short_error: str
    full_error: str
    is_benign: bool
    details: str
    error_id: str
    def __init__(self, user_error_message: _Optional[str] = ..., short_error: _Optional[str] = ..., full_error: _Optional[str] = ..., is_benign: _Optional[bool] = ..., details: _Optional[str] = ..., error_id: _Optional[str] = ...) -> None: ...

class CortexStepErrorMessage(_message.Message):
    __slots__ = ("error", "should_show_model", "should_show_user")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHOW_MODEL_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHOW_USER_FIELD_NUMBER: _ClassVar[int]
    error: CortexErrorDetails
    should_show_model: bool
    should_show_user: bool
    def __init__(self, error: _Optional[_Union[CortexErrorDetails, _Mapping]] = ..., should_show_model: _Optional[bool] = ..., should_show_user: _Optional[bool] = ...) -> None: ...

class CortexStepPlannerResponse(_message.Message):
    __slots__ = ("response", "thinking", "tool_calls", "modified_response")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    THINKING_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: str
    thinking: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[_codeium_common_pb2.ChatToolCall]
    modified_response: str
    def __init__(self, response: _Optional[str] = ..., thinking: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[_codeium_common_pb2.ChatToolCall, _Mapping]]] = ..., modified_response: _Optional[str] = ...) -> None: ...

class ActiveUserState(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CortexStepUserInput(_message.Message):
    __slots__ = ("query", "user_response", "items", "active_user_state", "images")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    USER_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_USER_STATE_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    query: str
    user_response: str
    items: _containers.RepeatedCompositeFieldContainer[_codeium_common_pb2.TextOrScopeItem]
    active_user_state: ActiveUserState
    images: _containers.RepeatedCompositeFieldContainer[_codeium_common_pb2.ImageData]
    def __init__(self, query: _Optional[str] = ..., user_response: _Optional[str] = ..., items: _Optional[_Iterable[_Union[_codeium_common_pb2.TextOrScopeItem, _Mapping]]] = ..., active_user_state: _Optional[_Union[ActiveUserState, _Mapping]] = ..., images: _Optional[_Iterable[_Union[_codeium_common_pb2.ImageData, _Mapping]]] = ...) -> None: ...

class CortexStepFinish(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CortexStepCheckpoint(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CortexStepCommandStatus(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CortexStepViewFile(_message.Message):
    __slots__ = ("absolute_path_uri", "start_line", "end_line", "content", "raw_content", "offset", "limit")
    ABSOLUTE_PATH_URI_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    RAW_CONTENT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    absolute_path_uri: str
    start_line: int
    end_line: int
    content: str
    raw_content: str
    offset: int
    limit: int
    def __init__(self, absolute_path_uri: _Optional[str] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., content: _Optional[str] = ..., raw_content: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class RunCommandOutput(_message.Message):
    __slots__ = ("full", "truncated", "num_lines_above", "ansi_output")
    FULL_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    NUM_LINES_ABOVE_FIELD_NUMBER: _ClassVar[int]
    ANSI_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    full: str
    truncated: bool
    num_lines_above: int
    ansi_output: str
    def __init__(self, full: _Optional[str] = ..., truncated: _Optional[bool] = ..., num_lines_above: _Optional[int] = ..., ansi_output: _Optional[str] = ...) -> None: ...

class CortexStepRunCommand(_message.Message):
    __slots__ = ("command", "cwd", "stdout", "stderr", "exit_code", "blocking", "combined_output", "command_line", "proposed_command_line")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    BLOCKING_FIELD_NUMBER: _ClassVar[int]
    COMBINED_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    command: str
    cwd: str
    stdout: str
    stderr: str
    exit_code: int
    blocking: bool
    combined_output: RunCommandOutput
    command_line: str
    proposed_command_line: str
    def __init__(self, command: _Optional[str] = ..., cwd: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., blocking: _Optional[bool] = ..., combined_output: _Optional[_Union[RunCommandOutput, _Mapping]] = ..., command_line: _Optional[str] = ..., proposed_command_line: _Optional[str] = ...) -> None: ...

class CortexStepGrepSearch(_message.Message):
    __slots__ = ("query", "raw_output", "search_path_uri")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_PATH_URI_FIELD_NUMBER: _ClassVar[int]
    query: str
    raw_output: str
    search_path_uri: str
    def __init__(self, query: _Optional[str] = ..., raw_output: _Optional[str] = ..., search_path_uri: _Optional[str] = ...) -> None: ...

class CortexStepGrepSearchV2(_message.Message):
    __slots__ = ("pattern", "path", "glob", "output_mode", "lines_after", "lines_before", "lines_both", "case_insensitive", "type", "head_limit", "multiline", "raw_output")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    GLOB_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    LINES_AFTER_FIELD_NUMBER: _ClassVar[int]
    LINES_BEFORE_FIELD_NUMBER: _ClassVar[int]
    LINES_BOTH_FIELD_NUMBER: _ClassVar[int]
    CASE_INSENSITIVE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MULTILINE_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    glob: str
    output_mode: str
    lines_after: int
    lines_before: int
    lines_both: int
    case_insensitive: bool
    type: str
    head_limit: int
    multiline: bool
    raw_output: str
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., glob: _Optional[str] = ..., output_mode: _Optional[str] = ..., lines_after: _Optional[int] = ..., lines_before: _Optional[int] = ..., lines_both: _Optional[int] = ..., case_insensitive: _Optional[bool] = ..., type: _Optional[str] = ..., head_limit: _Optional[int] = ..., multiline: _Optional[bool] = ..., raw_output: _Optional[str] = ...) -> None: ...

class CortexStepFind(_message.Message):
    __slots__ = ("pattern", "search_directory", "raw_output")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    SEARCH_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    search_directory: str
    raw_output: str
    def __init__(self, pattern: _Optional[str] = ..., search_directory: _Optional[str] = ..., raw_output: _Optional[str] = ...) -> None: ...

class CortexStepListDirectory(_message.Message):
    __slots__ = ("directory_path_uri", "children")
    DIRECTORY_PATH_URI_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    directory_path_uri: str
    children: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, directory_path_uri: _Optional[str] = ..., children: _Optional[_Iterable[str]] = ...) -> None: ...

class CortexStepWriteToFile(_message.Message):
    __slots__ = ("target_file_uri", "code_content", "file_created")
    TARGET_FILE_URI_FIELD_NUMBER: _ClassVar[int]
    CODE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    FILE_CREATED_FIELD_NUMBER: _ClassVar[int]
    target_file_uri: str
    code_content: _containers.RepeatedScalarFieldContainer[str]
    file_created: bool
    def __init__(self, target_file_uri: _Optional[str] = ..., code_content: _Optional[_Iterable[str]] = ..., file_created: _Optional[bool] = ...) -> None: ...

class CortexStepReadUrlContent(_message.Message):
    __slots__ = ("url", "web_document", "resolved_url", "latency_ms", "user_rejected", "auto_run_decision")
    URL_FIELD_NUMBER: _ClassVar[int]
    WEB_DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_URL_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    USER_REJECTED_FIELD_NUMBER: _ClassVar[int]
    AUTO_RUN_DECISION_FIELD_NUMBER: _ClassVar[int]
    url: str
    web_document: _codeium_common_pb2.KnowledgeBaseItem
    resolved_url: str
    latency_ms: int
    user_rejected: bool
    auto_run_decision: int
    def __init__(self, url: _Optional[str] = ..., web_document: _Optional[_Union[_codeium_common_pb2.KnowledgeBaseItem, _Mapping]] = ..., resolved_url: _Optional[str] = ..., latency_ms: _Optional[int] = ..., user_rejected: _Optional[bool] = ..., auto_run_decision: _Optional[int] = ...) -> None: ...

class CortexStepSearchWeb(_message.Message):
    __slots__ = ("query", "domain", "summary")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    query: str
    domain: str
    summary: str
    def __init__(self, query: _Optional[str] = ..., domain: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

class ReplacementChunk(_message.Message):
    __slots__ = ("target_content", "replacement_content", "allow_multiple")
    TARGET_CONTENT_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_CONTENT_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    target_content: str
    replacement_content: str
    allow_multiple: bool
    def __init__(self, target_content: _Optional[str] = ..., replacement_content: _Optional[str] = ..., allow_multiple: _Optional[bool] = ...) -> None: ...

class ActionSpecCommand(_message.Message):
    __slots__ = ("instruction", "is_edit", "file", "replacement_chunks")
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    IS_EDIT_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    instruction: str
    is_edit: bool
    file: _codeium_common_pb2.PathScopeItem
    replacement_chunks: _containers.RepeatedCompositeFieldContainer[ReplacementChunk]
    def __init__(self, instruction: _Optional[str] = ..., is_edit: _Optional[bool] = ..., file: _Optional[_Union[_codeium_common_pb2.PathScopeItem, _Mapping]] = ..., replacement_chunks: _Optional[_Iterable[_Union[ReplacementChunk, _Mapping]]] = ...) -> None: ...

class ActionSpec(_message.Message):
    __slots__ = ("command",)
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: ActionSpecCommand
    def __init__(self, command: _Optional[_Union[ActionSpecCommand, _Mapping]] = ...) -> None: ...

class CortexStepProposeCode(_message.Message):
    __slots__ = ("action_spec", "code_instruction")
    ACTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    CODE_INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    action_spec: ActionSpec
    code_instruction: str
    def __init__(self, action_spec: _Optional[_Union[ActionSpec, _Mapping]] = ..., code_instruction: _Optional[str] = ...) -> None: ...

class CortexStepCustomTool(_message.Message):
    __slots__ = ("recipe_id", "arguments_json", "output", "recipe_name")
    RECIPE_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RECIPE_NAME_FIELD_NUMBER: _ClassVar[int]
    recipe_id: str
    arguments_json: str
    output: str
    recipe_name: str
    def __init__(self, recipe_id: _Optional[str] = ..., arguments_json: _Optional[str] = ..., output: _Optional[str] = ..., recipe_name: _Optional[str] = ...) -> None: ...

class CortexStepMcpTool(_message.Message):
    __slots__ = ("server_name", "tool_call", "result_string")
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    RESULT_STRING_FIELD_NUMBER: _ClassVar[int]
    server_name: str
    tool_call: _codeium_common_pb2.ChatToolCall
    result_string: str
    def __init__(self, server_name: _Optional[str] = ..., tool_call: _Optional[_Union[_codeium_common_pb2.ChatToolCall, _Mapping]] = ..., result_string: _Optional[str] = ...) -> None: ...

class CortexStepToolCallProposal(_message.Message):
    __slots__ = ("tool_call",)
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    tool_call: _codeium_common_pb2.ChatToolCall
    def __init__(self, tool_call: _Optional[_Union[_codeium_common_pb2.ChatToolCall, _Mapping]] = ...) -> None: ...

class CortexStepToolCallChoice(_message.Message):
    __slots__ = ("proposal_tool_calls", "choice", "reason")
    PROPOSAL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    proposal_tool_calls: _containers.RepeatedCompositeFieldContainer[_codeium_common_pb2.ChatToolCall]
    choice: int
    reason: str
    def __init__(self, proposal_tool_calls: _Optional[_Iterable[_Union[_codeium_common_pb2.ChatToolCall, _Mapping]]] = ..., choice: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ReadUrlContentInteraction(_message.Message):
    __slots__ = ("url", "origin")
    URL_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    url: str
    origin: str
    def __init__(self, url: _Optional[str] = ..., origin: _Optional[str] = ...) -> None: ...

class RequestedInteraction(_message.Message):
    __slots__ = ("read_url_content",)
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    read_url_content: ReadUrlContentInteraction
    def __init__(self, read_url_content: _Optional[_Union[ReadUrlContentInteraction, _Mapping]] = ...) -> None: ...

class CortexStepMetadata(_message.Message):
    __slots__ = ("model_usage",)
    MODEL_USAGE_FIELD_NUMBER: _ClassVar[int]
    model_usage: _codeium_common_pb2.ModelUsageStats
    def __init__(self, model_usage: _Optional[_Union[_codeium_common_pb2.ModelUsageStats, _Mapping]] = ...) -> None: ...

class CortexTrajectoryStep(_message.Message):
    __slots__ = ("type", "status", "metadata", "finish", "grep_search", "view_file", "list_directory", "user_input", "planner_response", "write_to_file", "error_message", "run_command", "checkpoint", "propose_code", "find", "command_status", "read_url_content", "search_web", "custom_tool", "mcp_tool", "tool_call_proposal", "tool_call_choice", "grep_search_v2", "error", "requested_interaction")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    GREP_SEARCH_FIELD_NUMBER: _ClassVar[int]
    VIEW_FILE_FIELD_NUMBER: _ClassVar[int]
    LIST_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    USER_INPUT_FIELD_NUMBER: _ClassVar[int]
    PLANNER_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    WRITE_TO_FILE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_COMMAND_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    PROPOSE_CODE_FIELD_NUMBER: _ClassVar[int]
    FIND_FIELD_NUMBER: _ClassVar[int]
    COMMAND_STATUS_FIELD_NUMBER: _ClassVar[int]
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_WEB_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TOOL_FIELD_NUMBER: _ClassVar[int]
    MCP_TOOL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    GREP_SEARCH_V2_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_INTERACTION_FIELD_NUMBER: _ClassVar[int]
    type: CortexStepType
    status: CortexStepStatus
    metadata: CortexStepMetadata
    finish: CortexStepFinish
    grep_search: CortexStepGrepSearch
    view_file: CortexStepViewFile
    list_directory: CortexStepListDirectory
    user_input: CortexStepUserInput
    planner_response: CortexStepPlannerResponse
    write_to_file: CortexStepWriteToFile
    error_message: CortexStepErrorMessage
    run_command: CortexStepRunCommand
    checkpoint: CortexStepCheckpoint
    propose_code: CortexStepProposeCode
    find: CortexStepFind
    command_status: CortexStepCommandStatus
    read_url_content: CortexStepReadUrlContent
    search_web: CortexStepSearchWeb
    custom_tool: CortexStepCustomTool
    mcp_tool: CortexStepMcpTool
    tool_call_proposal: CortexStepToolCallProposal
    tool_call_choice: CortexStepToolCallChoice
    grep_search_v2: CortexStepGrepSearchV2
    error: CortexErrorDetails
    requested_interaction: RequestedInteraction
    def __init__(self, type: _Optional[_Union[CortexStepType, str]] = ..., status: _Optional[_Union[CortexStepStatus, str]] = ..., metadata: _Optional[_Union[CortexStepMetadata, _Mapping]] = ..., finish: _Optional[_Union[CortexStepFinish, _Mapping]] = ..., grep_search: _Optional[_Union[CortexStepGrepSearch, _Mapping]] = ..., view_file: _Optional[_Union[CortexStepViewFile, _Mapping]] = ..., list_directory: _Optional[_Union[CortexStepListDirectory, _Mapping]] = ..., user_input: _Optional[_Union[CortexStepUserInput, _Mapping]] = ..., planner_response: _Optional[_Union[CortexStepPlannerResponse, _Mapping]] = ..., write_to_file: _Optional[_Union[CortexStepWriteToFile, _Mapping]] = ..., error_message: _Optional[_Union[CortexStepErrorMessage, _Mapping]] = ..., run_command: _Optional[_Union[CortexStepRunCommand, _Mapping]] = ..., checkpoint: _Optional[_Union[CortexStepCheckpoint, _Mapping]] = ..., propose_code: _Optional[_Union[CortexStepProposeCode, _Mapping]] = ..., find: _Optional[_Union[CortexStepFind, _Mapping]] = ..., command_status: _Optional[_Union[CortexStepCommandStatus, _Mapping]] = ..., read_url_content: _Optional[_Union[CortexStepReadUrlContent, _Mapping]] = ..., search_web: _Optional[_Union[CortexStepSearchWeb, _Mapping]] = ..., custom_tool: _Optional[_Union[CortexStepCustomTool, _Mapping]] = ..., mcp_tool: _Optional[_Union[CortexStepMcpTool, _Mapping]] = ..., tool_call_proposal: _Optional[_Union[CortexStepToolCallProposal, _Mapping]] = ..., tool_call_choice: _Optional[_Union[CortexStepToolCallChoice, _Mapping]] = ..., grep_search_v2: _Optional[_Union[CortexStepGrepSearchV2, _Mapping]] = ..., error: _Optional[_Union[CortexErrorDetails, _Mapping]] = ..., requested_interaction: _Optional[_Union[RequestedInteraction, _Mapping]] = ...) -> None: ...

class ChatModelMetadata(_message.Message):
    __slots__ = ("system_prompt", "usage", "model_cost", "model_uid")
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    MODEL_COST_FIELD_NUMBER: _ClassVar[int]
    MODEL_UID_FIELD_NUMBER: _ClassVar[int]
    system_prompt: str
    usage: _codeium_common_pb2.ModelUsageStats
    model_cost: float
    model_uid: str
    def __init__(self, system_prompt: _Optional[str] = ..., usage: _Optional[_Union[_codeium_common_pb2.ModelUsageStats, _Mapping]] = ..., model_cost: _Optional[float] = ..., model_uid: _Optional[str] = ...) -> None: ...

class CortexStepGeneratorMetadata(_message.Message):
    __slots__ = ("chat_model", "step_indices", "execution_id", "arena_cap_reached")
    CHAT_MODEL_FIELD_NUMBER: _ClassVar[int]
    STEP_INDICES_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    ARENA_CAP_REACHED_FIELD_NUMBER: _ClassVar[int]
    chat_model: ChatModelMetadata
    step_indices: _containers.RepeatedScalarFieldContainer[int]
    execution_id: str
    arena_cap_reached: bool
    def __init__(self, chat_model: _Optional[_Union[ChatModelMetadata, _Mapping]] = ..., step_indices: _Optional[_Iterable[int]] = ..., execution_id: _Optional[str] = ..., arena_cap_reached: _Optional[bool] = ...) -> None: ...

class CortexTrajectory(_message.Message):
    __slots__ = ("trajectory_id", "steps", "generator_metadata", "trajectory_type", "cascade_id", "source")
    TRAJECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_METADATA_FIELD_NUMBER: _ClassVar[int]
    TRAJECTORY_TYPE_FIELD_NUMBER: _ClassVar[int]
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    trajectory_id: str
    steps: _containers.RepeatedCompositeFieldContainer[CortexTrajectoryStep]
    generator_metadata: _containers.RepeatedCompositeFieldContainer[CortexStepGeneratorMetadata]
    trajectory_type: CortexTrajectoryType
    cascade_id: str
    source: CortexTrajectorySource
    def __init__(self, trajectory_id: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[CortexTrajectoryStep, _Mapping]]] = ..., generator_metadata: _Optional[_Iterable[_Union[CortexStepGeneratorMetadata, _Mapping]]] = ..., trajectory_type: _Optional[_Union[CortexTrajectoryType, str]] = ..., cascade_id: _Optional[str] = ..., source: _Optional[_Union[CortexTrajectorySource, str]] = ...) -> None: ...

class ReadUrlContentInteractionAction(_message.Message):
    __slots__ = ("action", "url", "origin")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    action: ReadUrlContentAction
    url: str
    origin: str
    def __init__(self, action: _Optional[_Union[ReadUrlContentAction, str]] = ..., url: _Optional[str] = ..., origin: _Optional[str] = ...) -> None: ...

class CascadeUserInteraction(_message.Message):
    __slots__ = ("trajectory_id", "step_index", "read_url_content")
    TRAJECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_INDEX_FIELD_NUMBER: _ClassVar[int]
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    trajectory_id: str
    step_index: int
    read_url_content: ReadUrlContentInteractionAction
    def __init__(self, trajectory_id: _Optional[str] = ..., step_index: _Optional[int] = ..., read_url_content: _Optional[_Union[ReadUrlContentInteractionAction, _Mapping]] = ...) -> None: ...
