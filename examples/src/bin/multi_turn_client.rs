//! Talks to an agent that asks questions: each `INPUT_REQUIRED` is answered
//! with the next answer given on the command line, on the same task.
//!
//! Run with: `cargo run -p examples --bin multi_turn_client -- http://127.0.0.1:8080 Paris 3`
//! (start `multi_turn_agent` first).

use a2a_core::{Message, SendMessageRequest, SendMessageResponse, Task, TaskState};

fn said(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let mut answers = args;
    let client = a2a_client::Client::connect(&url).await?;

    // ANCHOR: turn
    let mut message = Message::user_text("I need a hotel");
    loop {
        println!("> {}", message.text());
        let request = SendMessageRequest::new(message);
        let SendMessageResponse::Task(task) = client.send_message(request, None).await? else {
            return Err("the agent answered with a message, not a task".into());
        };
        println!("{}: {}", task.status.state, said(&task));
        if task.status.state != TaskState::InputRequired {
            return Ok(());
        }
        let Some(answer) = answers.next() else {
            return Err("the agent wants more input than was given".into());
        };
        // The task and context ids make this message the next turn of the
        // same task rather than a new one.
        message = Message::user_text(answer)
            .with_task_id(task.id)
            .with_context_id(task.context_id);
    }
    // ANCHOR_END: turn
}
