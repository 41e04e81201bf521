//! The hub against the performance ceilings of `collaboration-scenarios.md`:
//! a routing decision (< 10 ms), recording an observer entry (< 100 ms),
//! loading the participants of 10,000 threads (< 500 ms), the thread-reuse
//! lookup (< 5 ms) and `collaborate` returning (< 3 s).

use std::collections::HashSet;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use a2a_core::{A2aError, AgentCard};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_hub::routing::{Place, decide, mentions};
use a2a_hub::{
    ChannelConfig, Collaborate, GuardConfig, HUB_DB, Hub, HubConfig, HubErrorKind, Post, Sender,
};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use criterion::{Criterion, criterion_group, criterion_main};

const AGENTS: [&str; 10] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
];

/// An agent that takes every message and says nothing.
struct Silent;

#[async_trait::async_trait]
impl AgentExecutor for Silent {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete().await
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A hub over `dir` with the silent agents `agents`, connected.
fn hub_with(config: HubConfig, dir: &Path, agents: &[&str]) -> (Hub, Gateway) {
    let hub = Hub::builder(config).data_dir(dir).open().expect("hub");
    let mut gateway = Gateway::builder().agent(hub.agent_definition());
    for name in agents {
        let card = AgentCard::new(*name, "silent");
        gateway = gateway.agent(AgentDefinition::new(*name, card, Silent));
    }
    let gateway = gateway.build("http://127.0.0.1:1").expect("gateway");
    hub.connect(&gateway, Default::default()).expect("connect");
    (hub, gateway)
}

/// Guards that never trip: a benchmark repeats what they are there to stop.
fn open_guards() -> GuardConfig {
    GuardConfig {
        pair_limit: u32::MAX,
        thread_burst: u32::MAX,
        ..GuardConfig::default()
    }
}

fn routing(c: &mut Criterion) {
    let mut group = c.benchmark_group("routing decision");
    let text = "@beta @gamma the deploy to staging failed again after the auth change; \
                can you look at the logs (https://ci.example.com/run/4711) together? \
                delta saw it first, mail ops@example.com if it is the certificate again, \
                and @kappa- please keep an eye on the rollout.";
    for agents in [4, 10] {
        let names: HashSet<&str> = AGENTS[..agents].iter().copied().collect();
        let members: Vec<String> = AGENTS[..agents].iter().map(|s| (*s).to_owned()).collect();
        let participants: Vec<String> = vec!["alpha".into(), "beta".into(), "delta".into()];
        let sender = Sender::Agent("alpha".to_owned());
        group.bench_function(format!("channel, {agents} agents"), |b| {
            b.iter(|| {
                let found = mentions(black_box(text), |n| names.contains(n));
                let place = Place::Channel {
                    default_agent: Some("alpha"),
                    members: &members,
                };
                black_box(decide(&sender, &found, place))
            });
        });
        group.bench_function(format!("thread of 3, {agents} agents"), |b| {
            b.iter(|| {
                let found = mentions(black_box(text), |n| names.contains(n));
                let place = Place::Thread {
                    participants: &participants,
                    members: &members,
                };
                black_box(decide(&sender, &found, place))
            });
        });
    }
    group.finish();
}

fn observer_entry(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("dir");
    // No default agent: a person's message reaches nobody, and each of the
    // ten agents keeps a record of it.
    let config = HubConfig {
        channels: vec![ChannelConfig::new("general")],
        ..HubConfig::default()
    };
    let (hub, _gateway) = rt.block_on(async { hub_with(config, dir.path(), &AGENTS) });
    let text = "status update: the build is green again, the flaky test is quarantined";
    // `cargo test` runs each bench once: count what was posted.
    let posted = std::cell::Cell::new(0usize);
    c.benchmark_group("observer entry")
        .bench_function("post with 10 observers (on disk)", |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let post = Post::new(Sender::Person("ann".into()), "general", text);
                        let message = hub.post(post).await.expect("post");
                        assert!(message.handlers.is_empty());
                        posted.set(posted.get() + 1);
                    }
                    start.elapsed()
                })
            });
        });
    assert_eq!(hub.observed("kappa").len(), posted.get().min(50));
}

/// The observer-entry post on a PostgreSQL record (one node of a cluster:
/// each post's transaction also announces it), in a schema of its own
/// that goes afterwards; `A2A_TEST_POSTGRES_URL` (default the local test
/// database). Skipped with a notice when PostgreSQL is unreachable.
fn observer_entry_postgres(c: &mut Criterion) {
    use sqlx::Connection as _;
    let rt = runtime();
    let url = std::env::var("A2A_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let schema = format!("a2a_hub_bench_{}", uuid::Uuid::new_v4().simple());
    let config = HubConfig {
        channels: vec![ChannelConfig::new("general")],
        ..HubConfig::default()
    };
    let opened = rt.block_on(async {
        Hub::builder(config)
            .postgres(url.clone())
            .postgres_schema(&schema)
            .node_id("bench")
            .open()
    });
    let hub = match opened {
        Ok(hub) => hub,
        Err(err) => {
            eprintln!("NOTICE: skipping the PostgreSQL bench: {err}");
            return;
        }
    };
    let gateway = rt.block_on(async {
        let mut gateway = Gateway::builder().agent(hub.agent_definition());
        for name in AGENTS {
            let card = AgentCard::new(name, "silent");
            gateway = gateway.agent(AgentDefinition::new(name, card, Silent));
        }
        let gateway = gateway.build("http://127.0.0.1:1").expect("gateway");
        hub.connect(&gateway, Default::default()).expect("connect");
        gateway
    });
    let text = "status update: the build is green again, the flaky test is quarantined";
    c.benchmark_group("observer entry")
        .bench_function("post with 10 observers (postgres)", |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let post = Post::new(Sender::Person("ann".into()), "general", text);
                        let message = hub.post(post).await.expect("post");
                        assert!(message.handlers.is_empty());
                    }
                    start.elapsed()
                })
            });
        });
    rt.block_on(async {
        hub.shutdown(Duration::from_secs(1)).await;
        drop(gateway);
        if let Ok(mut admin) = sqlx::postgres::PgConnection::connect(&url).await {
            let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .execute(&mut admin)
                .await;
        }
    });
}

/// A record of `threads` threads of 2 or 3 participants each, with a route
/// to each, written straight into `hub.db` once the hub made its schema.
fn seed(dir: &Path, threads: usize) {
    drop(Hub::builder(HubConfig::default()).data_dir(dir).open());
    let mut conn = rusqlite::Connection::open(dir.join(HUB_DB)).expect("hub.db");
    let tx = conn.transaction().expect("tx");
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut seq = 0i64;
    for i in 0..threads {
        let id = format!("thread-{i:05}");
        let opener = AGENTS[i % AGENTS.len()];
        let target = AGENTS[(i + 1) % AGENTS.len()];
        tx.execute(
            "INSERT INTO threads (id, channel, title, created_at, last_activity, messages)
             VALUES (?1, 'general', ?2, ?3, ?3, 4)",
            rusqlite::params![id, format!("{opener} → {target} · topic {i}"), now],
        )
        .expect("thread");
        let third = AGENTS[(i + 2) % AGENTS.len()];
        let members: &[&str] = match i % 2 {
            0 => &[opener, target],
            _ => &[opener, target, third],
        };
        for agent in members {
            seq += 1;
            tx.execute(
                "INSERT INTO participants (thread_id, agent, seq) VALUES (?1, ?2, ?3)",
                rusqlite::params![id, agent, seq],
            )
            .expect("participant");
        }
        tx.execute(
            "INSERT INTO routes (opener, target, channel, thread_id, updated_at)
             VALUES (?1, ?2, 'general', ?3, ?4)",
            rusqlite::params![format!("person-{i}"), target, id, now],
        )
        .expect("route");
    }
    tx.commit().expect("commit");
}

fn loading(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("dir");
    seed(dir.path(), 10_000);
    let hub = Hub::builder(HubConfig::default())
        .data_dir(dir.path())
        .open()
        .expect("hub");
    assert_eq!(hub.threads(None).len(), 10_000);
    assert!(hub.threads(None).iter().all(|t| t.participants.len() >= 2));
    drop(hub);
    c.benchmark_group("loading participants")
        .bench_function("open a hub of 10,000 threads", |b| {
            b.iter(|| {
                let hub = Hub::builder(HubConfig::default())
                    .data_dir(dir.path())
                    .open()
                    .expect("hub");
                black_box(hub)
            });
        });
}

fn reuse(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("dir");
    seed(dir.path(), 10_000);
    let mut group = c.benchmark_group("thread reuse");
    {
        let config = HubConfig {
            guards: open_guards(),
            ..HubConfig::default()
        };
        let (hub, _gateway) = rt.block_on(async { hub_with(config, dir.path(), &AGENTS) });
        let alpha = Sender::Agent("alpha".into());
        let first = rt
            .block_on(hub.collaborate(alpha.clone(), Collaborate::new("beta", "review")))
            .expect("first");
        rt.block_on(hub.wait_idle());
        group.bench_function("second collaborate of a pair, 10,000 routes", |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let again = hub
                            .collaborate(alpha.clone(), Collaborate::new("beta", "one more"))
                            .await
                            .expect("again");
                        spent += start.elapsed();
                        assert!(again.continued && again.thread == first.thread);
                        hub.wait_idle().await;
                    }
                    spent
                })
            });
        });
        rt.block_on(hub.shutdown(Duration::from_secs(1)));
    }
    {
        // The lookup alone, as near as the API gets: a pair guard that
        // refuses everything answers right after the route is looked up,
        // before anything is written or delivered.
        let config = HubConfig {
            guards: GuardConfig {
                pair_limit: 0,
                ..GuardConfig::default()
            },
            ..HubConfig::default()
        };
        let (hub, _gateway) = rt.block_on(async { hub_with(config, dir.path(), &AGENTS) });
        // A seeded route: person-42 asked delta in thread-00042.
        let person = Sender::Person("person-42".into());
        group.bench_function("lookup up to the pair guard, 10,000 routes", |b| {
            b.iter(|| {
                let refused = rt
                    .block_on(hub.collaborate(person.clone(), Collaborate::new("delta", "again")))
                    .expect_err("refused");
                assert_eq!(refused.kind(), HubErrorKind::Refused);
            });
        });
    }
    group.finish();
}

fn collaborate(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("dir");
    // A new thread every time: the most work collaborate does.
    let config = HubConfig {
        guards: open_guards(),
        reuse_window: Duration::ZERO,
        ..HubConfig::default()
    };
    let (hub, _gateway) = rt.block_on(async { hub_with(config, dir.path(), &AGENTS) });
    let alpha = Sender::Agent("alpha".into());
    c.benchmark_group("collaborate").bench_function(
        "new thread, delivered in process (on disk)",
        |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let done = hub
                            .collaborate(
                                alpha.clone(),
                                Collaborate::new("beta", "please review the auth module"),
                            )
                            .await
                            .expect("collaborate");
                        spent += start.elapsed();
                        assert!(done.delivered && !done.continued);
                        hub.wait_idle().await;
                    }
                    spent
                })
            });
        },
    );
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = routing, observer_entry, observer_entry_postgres, loading, reuse, collaborate
}
criterion_main!(benches);
