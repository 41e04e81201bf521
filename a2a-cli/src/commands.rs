//! The client commands.

use a2a_core::{
    AuthenticationInfo, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, Message, Part, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, SubscribeToTaskRequest, TaskPushNotificationConfig, TaskState,
};
use anyhow::Context as _;
use futures::StreamExt as _;

use crate::connect::{card, client};
use crate::output::{self, out, outln};
use crate::{CardArgs, GetArgs, ListArgs, PushCommand, SendArgs, TaskArgs};

pub(crate) async fn show_card(args: CardArgs) -> anyhow::Result<()> {
    let target = &args.target;
    let card = card(target).await?;
    let verified = match (&args.jwks, args.verify) {
        (Some(jwks), true) => {
            let keys = crate::connect::trusted_keys(target, jwks).await?;
            let verified = keys
                .verify(&card)
                .with_context(|| format!("the card of {:?} is not trusted", card.name))?;
            Some(verified)
        }
        _ => None,
    };
    if target.json {
        return output::json(&card);
    }
    output::card(&card)?;
    if let Some(verified) = verified {
        outln!(
            "Signature: verified with key {} ({})",
            verified.kid,
            verified.algorithm
        )?;
    }
    Ok(())
}

fn media_type(path: &std::path::Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("txt" | "md") => "text/plain",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

pub(crate) async fn send(args: SendArgs) -> anyhow::Result<()> {
    let mut parts = vec![Part::text(args.text)];
    for path in &args.files {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        parts.push(
            Part::raw(bytes)
                .with_filename(name)
                .with_media_type(media_type(path)),
        );
    }
    if let Some(data) = &args.data {
        let value: serde_json::Value =
            serde_json::from_str(data).context("--data is not valid JSON")?;
        parts.push(Part::data(value).with_media_type("application/json"));
    }
    let mut message = Message::user(parts);
    message.task_id = args.task_id.unwrap_or_default();
    message.context_id = args.context_id.unwrap_or_default();
    let mut request = SendMessageRequest::new(message);
    if args.no_wait {
        request.configuration = Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        });
    }
    let (client, options) = client(&args.target).await?;
    if args.stream {
        let mut events = client
            .send_streaming_message(request, Some(&options))
            .await?;
        while let Some(event) = events.next().await {
            let event = event?;
            if args.target.json {
                outln!("{}", serde_json::to_string(&event)?)?;
            } else {
                output::event(&event)?;
            }
        }
        return Ok(());
    }
    match client.send_message(request, Some(&options)).await? {
        response if args.target.json => output::json(&response)?,
        SendMessageResponse::Task(task) => output::task(&task)?,
        SendMessageResponse::Message(message) => output::message(&message)?,
    }
    Ok(())
}

pub(crate) async fn get(args: GetArgs) -> anyhow::Result<()> {
    let (client, options) = client(&args.task.target).await?;
    let request = GetTaskRequest {
        id: args.task.task_id,
        history_length: args.history,
        ..Default::default()
    };
    let task = client.get_task(request, Some(&options)).await?;
    if args.task.target.json {
        return output::json(&task);
    }
    output::task(&task)?;
    for message in &task.history {
        let who = if message.role == a2a_core::Role::User {
            "user"
        } else {
            "agent"
        };
        out!("  {who}: ")?;
        output::message(message)?;
    }
    Ok(())
}

fn parse_state(text: &str) -> anyhow::Result<TaskState> {
    let upper = text.to_ascii_uppercase().replace('-', "_");
    let name = if upper.starts_with("TASK_STATE_") {
        upper
    } else {
        format!("TASK_STATE_{upper}")
    };
    name.parse()
        .map_err(|_| anyhow::anyhow!("unknown task state {text:?}"))
}

pub(crate) async fn list(args: ListArgs) -> anyhow::Result<()> {
    let (client, options) = client(&args.target).await?;
    let mut request = ListTasksRequest {
        context_id: args.context_id.unwrap_or_default(),
        status: args
            .status
            .as_deref()
            .map(parse_state)
            .transpose()?
            .unwrap_or_default(),
        page_size: args.page_size,
        page_token: args.page_token.unwrap_or_default(),
        include_artifacts: args.artifacts.then_some(true),
        ..Default::default()
    };
    loop {
        let page = client.list_tasks(request.clone(), Some(&options)).await?;
        if args.target.json {
            output::json(&page)?;
        } else {
            for task in &page.tasks {
                output::task(task)?;
            }
            outln!("({} of {} tasks)", page.tasks.len(), page.total_size)?;
        }
        if !args.all || page.next_page_token.is_empty() {
            if !args.all && !page.next_page_token.is_empty() && !args.target.json {
                outln!("next page: --page-token {}", page.next_page_token)?;
            }
            return Ok(());
        }
        request.page_token = page.next_page_token;
    }
}

pub(crate) async fn cancel(args: TaskArgs) -> anyhow::Result<()> {
    let (client, options) = client(&args.target).await?;
    let task = client
        .cancel_task(
            CancelTaskRequest {
                id: args.task_id,
                ..Default::default()
            },
            Some(&options),
        )
        .await?;
    if args.target.json {
        output::json(&task)
    } else {
        output::task(&task)
    }
}

pub(crate) async fn subscribe(args: TaskArgs) -> anyhow::Result<()> {
    let (client, options) = client(&args.target).await?;
    let request = SubscribeToTaskRequest {
        id: args.task_id,
        ..Default::default()
    };
    let mut events = client.subscribe_to_task(request, Some(&options)).await?;
    while let Some(event) = events.next().await {
        let event = event?;
        if args.target.json {
            outln!("{}", serde_json::to_string(&event)?)?;
        } else {
            output::event(&event)?;
        }
    }
    Ok(())
}

pub(crate) async fn push(command: PushCommand) -> anyhow::Result<()> {
    match command {
        PushCommand::Set {
            task,
            webhook,
            push_token,
            auth,
        } => {
            let (client, options) = client(&task.target).await?;
            let authentication = auth.map(|auth| {
                let (scheme, credentials) = auth.split_once(' ').unwrap_or((auth.as_str(), ""));
                AuthenticationInfo {
                    scheme: scheme.to_owned(),
                    credentials: credentials.to_owned(),
                }
            });
            let config = TaskPushNotificationConfig {
                token: push_token.unwrap_or_default(),
                authentication,
                ..TaskPushNotificationConfig::new(task.task_id, webhook)
            };
            let saved = client
                .create_task_push_notification_config(config, Some(&options))
                .await?;
            if task.target.json {
                output::json(&saved)
            } else {
                outln!("webhook {} -> {}", saved.id, saved.url)?;
                Ok(())
            }
        }
        PushCommand::Get { task, config_id } => {
            let (client, options) = client(&task.target).await?;
            let request = GetTaskPushNotificationConfigRequest {
                task_id: task.task_id,
                id: config_id,
                ..Default::default()
            };
            let config = client
                .get_task_push_notification_config(request, Some(&options))
                .await?;
            if task.target.json {
                output::json(&config)
            } else {
                outln!("webhook {} -> {}", config.id, config.url)?;
                Ok(())
            }
        }
        PushCommand::List(task) => {
            let (client, options) = client(&task.target).await?;
            let request = ListTaskPushNotificationConfigsRequest {
                task_id: task.task_id,
                ..Default::default()
            };
            let list = client
                .list_task_push_notification_configs(request, Some(&options))
                .await?;
            if task.target.json {
                return output::json(&list);
            }
            for config in &list.configs {
                outln!("webhook {} -> {}", config.id, config.url)?;
            }
            Ok(())
        }
        PushCommand::Delete { task, config_id } => {
            let (client, options) = client(&task.target).await?;
            let request = DeleteTaskPushNotificationConfigRequest {
                task_id: task.task_id,
                id: config_id,
                ..Default::default()
            };
            client
                .delete_task_push_notification_config(request, Some(&options))
                .await?;
            if !task.target.json {
                outln!("deleted")?;
            }
            Ok(())
        }
    }
}

/// `a2a mcp`: the server's agents as MCP tools on stdin/stdout (see `crate::mcp`).
pub(crate) async fn mcp(args: crate::McpArgs) -> anyhow::Result<()> {
    crate::mcp::run(args).await
}
