//! What observing costs (scenarios O1-O4 of `collaboration-scenarios.md`):
//! ten observers of a busy channel keep at most 50 compact records each,
//! records expire after 24 hours (across a restart too), a record holds
//! only sender, excerpt, message id and time, and a handler keeps the whole
//! text. The hub's time follows tokio's paused clock.

mod support;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_conversation::Clock;
use a2a_core::GetTaskRequest;
use a2a_hub::{ChannelConfig, EXCERPT_CHARS, HUB_DB, HubConfig, HubMessage, ObserverRecord};
use support::{Script, Turn, World, answers, silent, world_with};

const OBSERVERS: [&str; 10] = [
    "obs0", "obs1", "obs2", "obs3", "obs4", "obs5", "obs6", "obs7", "obs8", "obs9",
];

/// `general`, handled by alpha by default; the hub's time is tokio's.
fn config() -> HubConfig {
    HubConfig {
        channels: vec![ChannelConfig::new("general").default_agent("alpha")],
        clock: Clock::tokio_from(chrono::Utc::now()),
        ..HubConfig::default()
    }
}

/// alpha (answering "alpha: TEXT") and the ten silent observers.
fn agents(alpha: Script) -> Vec<(&'static str, Script)> {
    let mut agents = vec![("alpha", alpha)];
    agents.extend(OBSERVERS.map(|name| (name, silent())));
    agents
}

async fn open(config: &HubConfig, dir: &Path) -> World {
    let alpha = answers(|text| format!("alpha: {text}"));
    world_with(config.clone(), agents(alpha), Some(dir), HashMap::new()).await
}

/// A person writes in `general` every 30 s for an hour; alpha answers each.
/// Returns every message of the channel, oldest first.
async fn busy_hour(world: &World) -> Vec<HubMessage> {
    for n in 0..120 {
        world
            .say("general", &format!("status update {n}: the build is green"))
            .await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
    let messages = world.channel_messages("general").await;
    assert_eq!(messages.len(), 240, "a question and an answer each time");
    messages
}

/// Rows of the observer table per agent.
fn stored_records(dir: &Path) -> HashMap<String, usize> {
    let conn = rusqlite::Connection::open(dir.join(HUB_DB)).expect("hub.db");
    let mut statement = conn
        .prepare("SELECT agent, COUNT(*) FROM observed GROUP BY agent")
        .expect("query");
    let rows = statement
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .expect("rows");
    rows.map(|row| {
        let (agent, count) = row.expect("row");
        (agent, usize::try_from(count).expect("count"))
    })
    .collect()
}

async fn restart(world: World, config: &HubConfig, dir: &Path) -> World {
    world.hub.shutdown(Duration::from_secs(1)).await;
    drop(world);
    open(config, dir).await
}

#[tokio::test(start_paused = true)]
async fn o1_ten_observers_of_a_busy_channel_keep_at_most_50_records_each() {
    let dir = tempfile::tempdir().expect("dir");
    let config = config();
    let world = open(&config, dir.path()).await;
    let messages = busy_hour(&world).await;
    let newest: Vec<&str> = messages[messages.len() - 50..]
        .iter()
        .map(|m| m.id.as_str())
        .collect();
    for observer in OBSERVERS {
        let records = world.hub.observed(observer);
        let ids: Vec<&str> = records.iter().map(|r| r.message_id.as_str()).collect();
        assert_eq!(ids, newest, "{observer} keeps the newest 50");
    }
    // alpha handled every question and wrote every answer: it observed none.
    assert!(world.hub.observed("alpha").is_empty());
    assert_eq!(world.calls.count("alpha"), 120);
    for observer in OBSERVERS {
        assert_eq!(world.calls.count(observer), 0, "{observer} was called");
    }
    // The record on disk is no bigger than what the hub holds.
    let stored = stored_records(dir.path());
    assert_eq!(stored.len(), OBSERVERS.len(), "{stored:?}");
    assert!(stored.values().all(|n| *n == 50), "{stored:?}");

    // What the next call of an observer brings along is bounded the same way.
    world.say("general", "@obs3 anything to add?").await;
    let call = &world.calls.of("obs3")[0];
    let observed = &call.hub.as_ref().expect("hub context").observed;
    assert_eq!(observed.len(), 50);
    assert_eq!(observed.last().expect("record").message_id, newest[49]);
}

#[tokio::test(start_paused = true)]
async fn o2_observer_records_expire_after_24_hours_also_across_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let config = config();
    let world = open(&config, dir.path()).await;
    busy_hour(&world).await;
    let kept = world.hub.observed("obs0");
    assert_eq!(kept.len(), 50);
    let oldest = kept[0].t;
    let newest = kept[49].t;
    assert!(newest > oldest);

    // 23 hours later, all are there, also after a restart.
    tokio::time::sleep(Duration::from_secs(23 * 3600)).await;
    assert_eq!(world.hub.observed("obs0"), kept);
    let world = restart(world, &config, dir.path()).await;
    for observer in OBSERVERS {
        assert_eq!(world.hub.observed(observer), kept, "{observer}");
    }

    // 24 hours after the oldest, the oldest are gone; the rest stay.
    let until_oldest_expires = (oldest + chrono::Duration::hours(24)) - config.clock.now();
    tokio::time::sleep(until_oldest_expires.to_std().expect("ahead")).await;
    let day_ago = config.clock.now() - chrono::Duration::hours(24);
    let younger: Vec<ObserverRecord> = kept.iter().filter(|r| r.t > day_ago).cloned().collect();
    assert!(
        !younger.is_empty() && younger.len() < 50,
        "{}",
        younger.len()
    );
    assert_eq!(world.hub.observed("obs5"), younger);

    // 24 hours after the newest, none is left, in memory or on disk.
    let until_newest_expires = (newest + chrono::Duration::hours(24)) - config.clock.now();
    tokio::time::sleep(until_newest_expires.to_std().expect("ahead")).await;
    for observer in OBSERVERS {
        assert!(world.hub.observed(observer).is_empty(), "{observer}");
    }
    let world = restart(world, &config, dir.path()).await;
    for observer in OBSERVERS {
        assert!(world.hub.observed(observer).is_empty(), "{observer}");
    }
    assert!(
        stored_records(dir.path()).is_empty(),
        "{:?}",
        stored_records(dir.path())
    );
    // A new message is observed again.
    world.say("general", "a new day").await;
    assert_eq!(world.hub.observed("obs0").len(), 2);
}

/// A text longer than an excerpt, its tail unmistakable, with characters
/// of more than one byte before the cut.
const LONG: &str = "Größenänderung der Übersichtsseite: bitte prüfen, ob alles passt — \
                    the tail after fifty characters says TAIL-ONLY-HANDLERS-SEE-THIS";

#[tokio::test(start_paused = true)]
async fn o3_an_observer_record_holds_only_sender_excerpt_message_id_and_time() {
    let dir = tempfile::tempdir().expect("dir");
    let config = config();
    let world = open(&config, dir.path()).await;
    let message = world.say("general", LONG).await;
    let records = world.hub.observed("obs0");
    assert_eq!(records.len(), 2, "the question and alpha's answer");
    let record = &records[0];
    let excerpt: String = LONG.chars().take(EXCERPT_CHARS).collect();
    assert_eq!(record.from, "ann");
    assert_eq!(record.excerpt, excerpt);
    assert_eq!(record.excerpt.chars().count(), 50);
    assert_eq!(record.message_id, message.id);
    assert_eq!(record.t, message.t);
    assert_eq!(records[1].from, "alpha");
    assert_eq!(
        records[1].excerpt,
        format!("alpha: {LONG}")
            .chars()
            .take(50)
            .collect::<String>()
    );

    // As stored and as sent: those four fields, never the whole text.
    let json = serde_json::to_value(record).expect("json");
    let fields: HashSet<&str> = json
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(fields, HashSet::from(["from", "excerpt", "messageId", "t"]));
    let conn = rusqlite::Connection::open(dir.path().join(HUB_DB)).expect("hub.db");
    let bodies: Vec<String> = conn
        .prepare("SELECT body FROM observed")
        .expect("query")
        .query_map([], |row| row.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("bodies");
    assert_eq!(bodies.len(), 20, "two records for each of ten observers");
    for body in &bodies {
        assert!(!body.contains("TAIL-ONLY"), "{body}");
        let stored: serde_json::Value = serde_json::from_str(body).expect("json");
        let keys: HashSet<&str> = stored
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, fields, "{body}");
    }
    world.say("general", "@obs0 what was that about?").await;
    let call = &world.calls.of("obs0")[0];
    let context = call.hub.as_ref().expect("hub context");
    assert_eq!(context.observed[..2], records[..]);
    assert!(!call.text.contains("TAIL-ONLY"));
}

#[tokio::test(start_paused = true)]
async fn o4_a_handler_keeps_the_whole_text_in_its_history() {
    let dir = tempfile::tempdir().expect("dir");
    let tasks = Arc::new(Mutex::new(Vec::new()));
    let recorded = tasks.clone();
    let alpha: Script = Arc::new(move |turn: Turn| {
        recorded
            .lock()
            .expect("tasks")
            .push(turn.ctx.task_id.clone());
        Box::pin(async move { Some(format!("alpha: {}", turn.call.text)) })
    });
    let world = world_with(config(), agents(alpha), Some(dir.path()), HashMap::new()).await;
    let message = world.say("general", LONG).await;
    assert_eq!(message.handlers, ["alpha"]);

    // The handler got the whole text...
    let calls = world.calls.of("alpha");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].text, LONG);
    // ... which its task's history keeps.
    let task_id = tasks.lock().expect("tasks")[0].clone();
    let client = world
        .gateway
        .peers(world.hub.name())
        .expect("peers")
        .client("alpha")
        .expect("alpha");
    let task = client
        .get_task(
            GetTaskRequest {
                id: task_id,
                ..GetTaskRequest::default()
            },
            None,
        )
        .await
        .expect("alpha's task");
    assert!(
        task.history.iter().any(|m| m.text() == LONG),
        "{:?}",
        task.history
    );
    // The channel's history is whole too; only observers hold excerpts.
    let history = world.channel_messages("general").await;
    assert_eq!(history[0].text, LONG);
    assert_eq!(history[1].text, format!("alpha: {LONG}"));
    assert!(
        world
            .hub
            .observed("obs0")
            .iter()
            .all(|r| !r.excerpt.contains("TAIL-ONLY"))
    );
}

/// Records past their day leave the record while the hub runs, also those
/// of an agent that observes nothing any more.
#[tokio::test(start_paused = true)]
async fn expired_records_leave_the_record_while_the_hub_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let config = HubConfig {
        channels: vec![
            ChannelConfig::new("general").default_agent("alpha"),
            ChannelConfig::new("quiet")
                .default_agent("alpha")
                .members(["alpha", "obs0"]),
        ],
        ..config()
    };
    let world = open(&config, dir.path()).await;
    world.say("general", "everyone sees this").await;
    assert_eq!(stored_records(dir.path()).get("obs9"), Some(&2));
    tokio::time::advance(Duration::from_secs(24 * 3600)).await;
    // obs9 is not in `quiet`: nothing new for it, and its old records go.
    world.say("quiet", "only obs0 sees this").await;
    let stored = stored_records(dir.path());
    assert_eq!(stored.get("obs9"), None, "{stored:?}");
    assert_eq!(stored.get("obs0"), Some(&2), "{stored:?}");
    assert!(world.hub.observed("obs9").is_empty());
}
