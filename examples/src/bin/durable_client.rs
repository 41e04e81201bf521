//! Starts a long task without waiting for it, or follows one to its end,
//! across restarts of the agent.
//!
//! Run with: `cargo run -p examples --bin durable_client -- http://127.0.0.1:8080 count 10`
//! (prints `task TASK_ID`), then, as late as you like:
//! `cargo run -p examples --bin durable_client -- http://127.0.0.1:8080 wait TASK_ID`
//! (start `durable_agent` first).

use a2a_client::{Client, FollowUpdate, TaskFollower};
use a2a_core::{
    Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, command, value] = args.as_slice() else {
        return Err("usage: durable_client URL (count N | wait TASK_ID)".into());
    };
    let client = Client::connect(url).await?;
    match command.as_str() {
        "count" => {
            // ANCHOR: immediately
            let mut request = SendMessageRequest::new(Message::user_text(format!("count {value}")));
            // Answer at once: the work goes on whether or not anyone waits.
            request.configuration = Some(SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            });
            // ANCHOR_END: immediately
            match client.send_message(request, None).await? {
                SendMessageResponse::Task(task) => println!("task {}", task.id),
                SendMessageResponse::Message(m) => println!("reply: {}", m.text()),
            }
        }
        "wait" => {
            // ANCHOR: follow
            // Reads the task's events; when the stream is cut (the agent
            // restarting, say) it reads the task and subscribes again.
            let mut follower = TaskFollower::subscribing(&client, value.as_str());
            let task = loop {
                match follower.next().await? {
                    FollowUpdate::Event(StreamResponse::StatusUpdate(update))
                        if update.status.state.is_settled() =>
                    {
                        follower.read_now();
                    }
                    FollowUpdate::Task(task) if task.status.state.is_settled() => break task,
                    FollowUpdate::Event(_) | FollowUpdate::Task(_) => {}
                }
            };
            // ANCHOR_END: follow
            let said = task.status.message.map(|m| m.text()).unwrap_or_default();
            println!("{}: {said}", task.status.state);
            for artifact in &task.artifacts {
                let text: String = artifact.parts.iter().filter_map(|p| p.as_text()).collect();
                println!("artifact {}: {}", artifact.artifact_id, text.trim_end());
            }
        }
        other => return Err(format!("unknown command {other:?}: count or wait").into()),
    }
    Ok(())
}
