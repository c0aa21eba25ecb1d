import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from fakels.proto.exa.chat_pb import chat_pb2 as _chat_pb2
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as _codeium_common_pb2
from fakels.proto.exa.cortex_pb import cortex_pb2 as _cortex_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StartCascadeRequest(_message.Message):
    __slots__ = ("metadata", "source", "trajectory_type")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TRAJECTORY_TYPE_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    source: _cortex_pb2.CortexTrajectorySource
    trajectory_type: _cortex_pb2.CortexTrajectoryType
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ..., source: _Optional[_Union[_cortex_pb2.CortexTrajectorySource, str]] = ..., trajectory_type: _Optional[_Union[_cortex_pb2.CortexTrajectoryType, str]] = ...) -> None: ...

class StartCascadeResponse(_message.Message):
    __slots__ = ("cascade_id", "arena_cascade_ids")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    ARENA_CASCADE_IDS_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    arena_cascade_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cascade_id: _Optional[str] = ..., arena_cascade_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SendUserCascadeMessageRequest(_message.Message):
    __slots__ = ("cascade_id", "items", "metadata", "cascade_config", "images", "additional_steps")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CASCADE_CONFIG_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    items: _containers.RepeatedCompositeFieldContainer[_codeium_common_pb2.TextOrScopeItem]
    metadata: _codeium_common_pb2.Metadata
    cascade_config: _cortex_pb2.CascadeConfig
    images: _containers.RepeatedCompositeFieldContainer[_codeium_common_pb2.ImageData]
    additional_steps: _containers.RepeatedCompositeFieldContainer[_cortex_pb2.CortexTrajectoryStep]
    def __init__(self, cascade_id: _Optional[str] = ..., items: _Optional[_Iterable[_Union[_codeium_common_pb2.TextOrScopeItem, _Mapping]]] = ..., metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ..., cascade_config: _Optional[_Union[_cortex_pb2.CascadeConfig, _Mapping]] = ..., images: _Optional[_Iterable[_Union[_codeium_common_pb2.ImageData, _Mapping]]] = ..., additional_steps: _Optional[_Iterable[_Union[_cortex_pb2.CortexTrajectoryStep, _Mapping]]] = ...) -> None: ...

class SendUserCascadeMessageResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetCascadeTrajectoryRequest(_message.Message):
    __slots__ = ("cascade_id",)
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    def __init__(self, cascade_id: _Optional[str] = ...) -> None: ...

class GetCascadeTrajectoryResponse(_message.Message):
    __slots__ = ("trajectory", "status", "num_total_steps", "num_total_generator_metadata")
    TRAJECTORY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NUM_TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    NUM_TOTAL_GENERATOR_METADATA_FIELD_NUMBER: _ClassVar[int]
    trajectory: _cortex_pb2.CortexTrajectory
    status: _cortex_pb2.CascadeRunStatus
    num_total_steps: int
    num_total_generator_metadata: int
    def __init__(self, trajectory: _Optional[_Union[_cortex_pb2.CortexTrajectory, _Mapping]] = ..., status: _Optional[_Union[_cortex_pb2.CascadeRunStatus, str]] = ..., num_total_steps: _Optional[int] = ..., num_total_generator_metadata: _Optional[int] = ...) -> None: ...

class GetCascadeTrajectoryStepsRequest(_message.Message):
    __slots__ = ("cascade_id", "step_offset")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_OFFSET_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    step_offset: int
    def __init__(self, cascade_id: _Optional[str] = ..., step_offset: _Optional[int] = ...) -> None: ...

class GetCascadeTrajectoryStepsResponse(_message.Message):
    __slots__ = ("steps",)
    STEPS_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[_cortex_pb2.CortexTrajectoryStep]
    def __init__(self, steps: _Optional[_Iterable[_Union[_cortex_pb2.CortexTrajectoryStep, _Mapping]]] = ...) -> None: ...

class GetCascadeTrajectoryGeneratorMetadataRequest(_message.Message):
    __slots__ = ("cascade_id", "generator_metadata_offset")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    generator_metadata_offset: int
    def __init__(self, cascade_id: _Optional[str] = ..., generator_metadata_offset: _Optional[int] = ...) -> None: ...

class GetCascadeTrajectoryGeneratorMetadataResponse(_message.Message):
    __slots__ = ("generator_metadata",)
    GENERATOR_METADATA_FIELD_NUMBER: _ClassVar[int]
    generator_metadata: _containers.RepeatedCompositeFieldContainer[_cortex_pb2.CortexStepGeneratorMetadata]
    def __init__(self, generator_metadata: _Optional[_Iterable[_Union[_cortex_pb2.CortexStepGeneratorMetadata, _Mapping]]] = ...) -> None: ...

class InitializeCascadePanelStateRequest(_message.Message):
    __slots__ = ("metadata", "workspace_trusted")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_TRUSTED_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    workspace_trusted: bool
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ..., workspace_trusted: _Optional[bool] = ...) -> None: ...

class InitializeCascadePanelStateResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddTrackedWorkspaceRequest(_message.Message):
    __slots__ = ("workspace",)
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    def __init__(self, workspace: _Optional[str] = ...) -> None: ...

class AddTrackedWorkspaceResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateWorkspaceTrustRequest(_message.Message):
    __slots__ = ("metadata", "workspace_trusted")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_TRUSTED_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    workspace_trusted: bool
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ..., workspace_trusted: _Optional[bool] = ...) -> None: ...

class UpdateWorkspaceTrustResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("metadata",)
    METADATA_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("last_extension_heartbeat",)
    LAST_EXTENSION_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    last_extension_heartbeat: _timestamp_pb2.Timestamp
    def __init__(self, last_extension_heartbeat: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetUserStatusRequest(_message.Message):
    __slots__ = ("metadata",)
    METADATA_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ...) -> None: ...

class GetUserStatusResponse(_message.Message):
    __slots__ = ("user_status", "plan_info")
    USER_STATUS_FIELD_NUMBER: _ClassVar[int]
    PLAN_INFO_FIELD_NUMBER: _ClassVar[int]
    user_status: _codeium_common_pb2.UserStatus
    plan_info: _codeium_common_pb2.PlanInfo
    def __init__(self, user_status: _Optional[_Union[_codeium_common_pb2.UserStatus, _Mapping]] = ..., plan_info: _Optional[_Union[_codeium_common_pb2.PlanInfo, _Mapping]] = ...) -> None: ...

class UpdatePanelStateWithUserStatusRequest(_message.Message):
    __slots__ = ("metadata", "user_status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    USER_STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: _codeium_common_pb2.Metadata
    user_status: _codeium_common_pb2.UserStatus
    def __init__(self, metadata: _Optional[_Union[_codeium_common_pb2.Metadata, _Mapping]] = ..., user_status: _Optional[_Union[_codeium_common_pb2.UserStatus, _Mapping]] = ...) -> None: ...

class UpdatePanelStateWithUserStatusResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HandleCascadeUserInteractionRequest(_message.Message):
    __slots__ = ("cascade_id", "interaction")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    interaction: _cortex_pb2.CascadeUserInteraction
    def __init__(self, cascade_id: _Optional[str] = ..., interaction: _Optional[_Union[_cortex_pb2.CascadeUserInteraction, _Mapping]] = ...) -> None: ...

class HandleCascadeUserInteractionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelCascadeInvocationRequest(_message.Message):
    __slots__ = ("cascade_id",)
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    def __init__(self, cascade_id: _Optional[str] = ...) -> None: ...

class CancelCascadeInvocationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelCascadeInvocationAndWaitRequest(_message.Message):
    __slots__ = ("cascade_id",)
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    def __init__(self, cascade_id: _Optional[str] = ...) -> None: ...

class CancelCascadeInvocationAndWaitResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelCascadeStepsRequest(_message.Message):
    __slots__ = ("cascade_id", "step_indices")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_INDICES_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    step_indices: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, cascade_id: _Optional[str] = ..., step_indices: _Optional[_Iterable[int]] = ...) -> None: ...

class CancelCascadeStepsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
