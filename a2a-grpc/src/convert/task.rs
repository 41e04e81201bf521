//! Tasks, messages, events, requests and push configs.

use a2a_core as core;

use super::{ConvertError, FromProto, ToProto, mirror};
use crate::pb;

impl ToProto for core::Part {
    type Proto = pb::Part;
    fn to_proto(self) -> pb::Part {
        use pb::part::Content;
        let content = match self.content {
            core::PartContent::Text(text) => Content::Text(text),
            core::PartContent::Raw(bytes) => Content::Raw(bytes),
            core::PartContent::Url(url) => Content::Url(url),
            core::PartContent::Data(data) => Content::Data(data.to_proto()),
        };
        pb::Part {
            content: Some(content),
            metadata: self.metadata.to_proto(),
            filename: self.filename,
            media_type: self.media_type,
        }
    }
}

impl FromProto for core::Part {
    type Proto = pb::Part;
    fn from_proto(proto: pb::Part) -> Result<Self, ConvertError> {
        use pb::part::Content;
        let content = match proto.content {
            Some(Content::Text(text)) => core::PartContent::Text(text),
            Some(Content::Raw(bytes)) => core::PartContent::Raw(bytes),
            Some(Content::Url(url)) => core::PartContent::Url(url),
            Some(Content::Data(data)) => {
                core::PartContent::Data(FromProto::from_proto(data).map_err(|e| e.at("data"))?)
            }
            None => {
                return Err(ConvertError::new(
                    "part has no content; expected one of text, raw, url, data",
                ));
            }
        };
        Ok(core::Part {
            content,
            metadata: FromProto::from_proto(proto.metadata).map_err(|e| e.at("metadata"))?,
            filename: proto.filename,
            media_type: proto.media_type,
        })
    }
}

mirror!(core::Message => pb::Message {
    message_id, context_id, task_id, role, parts, metadata, extensions, reference_task_ids
});
mirror!(core::TaskStatus => pb::TaskStatus { state, message, timestamp });
mirror!(core::Task => pb::Task { id, context_id, artifacts, history, metadata } required { status });
mirror!(core::Artifact => pb::Artifact {
    artifact_id, name, description, parts, metadata, extensions
});
mirror!(core::TaskStatusUpdateEvent => pb::TaskStatusUpdateEvent {
    task_id, context_id, metadata
} required { status });
mirror!(core::TaskArtifactUpdateEvent => pb::TaskArtifactUpdateEvent {
    task_id, context_id, append, last_chunk, metadata
} required { artifact });

impl ToProto for core::StreamResponse {
    type Proto = pb::StreamResponse;
    fn to_proto(self) -> pb::StreamResponse {
        use pb::stream_response::Payload;
        let payload = match self {
            core::StreamResponse::Task(task) => Payload::Task(task.to_proto()),
            core::StreamResponse::Message(message) => Payload::Message(message.to_proto()),
            core::StreamResponse::StatusUpdate(update) => Payload::StatusUpdate(update.to_proto()),
            core::StreamResponse::ArtifactUpdate(update) => {
                Payload::ArtifactUpdate(update.to_proto())
            }
        };
        pb::StreamResponse {
            payload: Some(payload),
        }
    }
}

impl FromProto for core::StreamResponse {
    type Proto = pb::StreamResponse;
    fn from_proto(proto: pb::StreamResponse) -> Result<Self, ConvertError> {
        use pb::stream_response::Payload;
        Ok(match proto.payload {
            Some(Payload::Task(task)) => {
                core::StreamResponse::Task(FromProto::from_proto(task).map_err(|e| e.at("task"))?)
            }
            Some(Payload::Message(message)) => core::StreamResponse::Message(
                FromProto::from_proto(message).map_err(|e| e.at("message"))?,
            ),
            Some(Payload::StatusUpdate(update)) => core::StreamResponse::StatusUpdate(
                FromProto::from_proto(update).map_err(|e| e.at("statusUpdate"))?,
            ),
            Some(Payload::ArtifactUpdate(update)) => core::StreamResponse::ArtifactUpdate(
                FromProto::from_proto(update).map_err(|e| e.at("artifactUpdate"))?,
            ),
            None => return Err(ConvertError::new("StreamResponse has no payload")),
        })
    }
}

impl ToProto for core::SendMessageResponse {
    type Proto = pb::SendMessageResponse;
    fn to_proto(self) -> pb::SendMessageResponse {
        use pb::send_message_response::Payload;
        let payload = match self {
            core::SendMessageResponse::Task(task) => Payload::Task(task.to_proto()),
            core::SendMessageResponse::Message(message) => Payload::Message(message.to_proto()),
        };
        pb::SendMessageResponse {
            payload: Some(payload),
        }
    }
}

impl FromProto for core::SendMessageResponse {
    type Proto = pb::SendMessageResponse;
    fn from_proto(proto: pb::SendMessageResponse) -> Result<Self, ConvertError> {
        use pb::send_message_response::Payload;
        Ok(match proto.payload {
            Some(Payload::Task(task)) => core::SendMessageResponse::Task(
                FromProto::from_proto(task).map_err(|e| e.at("task"))?,
            ),
            Some(Payload::Message(message)) => core::SendMessageResponse::Message(
                FromProto::from_proto(message).map_err(|e| e.at("message"))?,
            ),
            None => return Err(ConvertError::new("SendMessageResponse has no payload")),
        })
    }
}

mirror!(core::SendMessageRequest => pb::SendMessageRequest {
    tenant, configuration, metadata
} required { message });
mirror!(core::SendMessageConfiguration => pb::SendMessageConfiguration {
    accepted_output_modes, task_push_notification_config, history_length, return_immediately
});
mirror!(core::GetTaskRequest => pb::GetTaskRequest { tenant, id, history_length });
mirror!(core::ListTasksResponse => pb::ListTasksResponse {
    tasks, next_page_token, page_size, total_size
});
mirror!(core::CancelTaskRequest => pb::CancelTaskRequest { tenant, id, metadata });
mirror!(core::SubscribeToTaskRequest => pb::SubscribeToTaskRequest { tenant, id });
mirror!(core::GetExtendedAgentCardRequest => pb::GetExtendedAgentCardRequest { tenant });
mirror!(core::TaskPushNotificationConfig => pb::TaskPushNotificationConfig {
    tenant, id, task_id, url, token, authentication
});
mirror!(core::AuthenticationInfo => pb::AuthenticationInfo { scheme, credentials });
mirror!(core::GetTaskPushNotificationConfigRequest => pb::GetTaskPushNotificationConfigRequest {
    tenant, task_id, id
});
mirror!(core::DeleteTaskPushNotificationConfigRequest => pb::DeleteTaskPushNotificationConfigRequest {
    tenant, task_id, id
});
mirror!(core::ListTaskPushNotificationConfigsRequest => pb::ListTaskPushNotificationConfigsRequest {
    tenant, task_id, page_size, page_token
});
mirror!(core::ListTaskPushNotificationConfigsResponse => pb::ListTaskPushNotificationConfigsResponse {
    configs, next_page_token
});

mirror!(core::ListTasksRequest => pb::ListTasksRequest {
    tenant, context_id, status, page_size, page_token, history_length, status_timestamp_after,
    include_artifacts
});
