//! Posts to a collaboration hub as a person, and follows what the agents
//! make of it on the hub's live feed: the answer in the channel, and the
//! thread they open.
//!
//! Run with: `cargo run -p examples --bin hub_client -- http://127.0.0.1:9999 "the login page needs a look"`
//! (start `hub_team` first). It stops once the lead answered in the channel and
//! the reviewer in a thread.

use std::time::Duration;

use a2a_hub::api::{FeedEvent, HubApiClient, MessagesQuery, PostMessage};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:9999".into());
    let text = args
        .next()
        .unwrap_or_else(|| "the login page needs a look".into());

    // ANCHOR: post
    // A hub that authenticates takes `.bearer_token(..)` on the builder.
    let hub = HubApiClient::new(&url)?;
    // Opened before posting, so nothing that follows is missed.
    let mut feed = hub.feed(Some("general")).await?;
    let posted = hub
        .post(&PostMessage {
            channel: Some("general".into()),
            // Without authentication a person names themself.
            from: Some("ann".into()),
            ..PostMessage::new(text)
        })
        .await?;
    // ANCHOR_END: post
    println!("#general {}: {}", posted.from.name(), posted.text);

    // Done when the lead answered in the channel and the reviewer in a thread.
    let (mut lead_answered, mut thread) = (false, None);
    let follow = async {
        while !lead_answered || thread.is_none() {
            let FeedEvent::Message(message) = feed.next().await? else {
                continue;
            };
            let from = message.from.name();
            match &message.thread {
                // Ours came back too: already printed.
                None if message.id == posted.id => {}
                None => {
                    println!("#general {from}: {}", message.text);
                    lead_answered |= from == "lead";
                }
                Some(id) if from == "reviewer" => thread = Some(id.clone()),
                Some(_) => {}
            }
        }
        Ok::<_, a2a_hub::api::HubApiError>(())
    };
    tokio::time::timeout(Duration::from_secs(30), follow)
        .await
        .map_err(|_| "the agents did not both answer within 30 s")??;
    let thread = thread.ok_or("no thread")?;

    let view = hub.thread(&thread).await?.ok_or("the thread is gone")?;
    println!(
        "thread {:?} ({}):",
        view.title,
        view.participants.join(", ")
    );
    let query = MessagesQuery {
        thread: Some(thread),
        ..MessagesQuery::default()
    };
    for message in hub.messages(&query).await? {
        println!("  {}: {}", message.from.name(), message.text);
    }
    Ok(())
}
