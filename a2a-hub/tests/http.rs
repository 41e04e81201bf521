//! The hub's HTTP API and live feed, served on a port: hostile inputs are
//! refused with a JSON error (never a 500), the live feed delivers what
//! happens, and with the gateway's authentication the API authenticates
//! too.

#![allow(clippy::unwrap_used)] // the helpers too, not only the tests

mod support;

use std::collections::HashMap;
use std::time::Duration;

use a2a_hub::MAX_TEXT_BYTES;
use a2a_server::auth::{BearerAuth, Principal};
use futures::StreamExt as _;
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use support::{World, general_and_ops, team, world, world_built};

async fn served() -> (World, String) {
    let world = world(general_and_ops(), team()).await;
    let url = world.serve().await;
    (world, url)
}

/// The status and the JSON body of `response`.
async fn answer(response: Response) -> (StatusCode, Value) {
    let status = response.status();
    let body = response.bytes().await.unwrap();
    let json = serde_json::from_slice(&body).unwrap_or_else(|_| {
        panic!(
            "{status}: not JSON: {:?}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        )
    });
    (status, json)
}

/// Asserts a refusal: `status`, and an error message that says something
/// (within 10 seconds: a refusal never streams).
async fn refused(response: Response, status: StatusCode) -> String {
    let (got, body) = tokio::time::timeout(Duration::from_secs(10), answer(response))
        .await
        .expect("a refusal whose body did not end within 10 s");
    assert_eq!(got, status, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "no error message: {body}");
    message.to_owned()
}

async fn post(client: &Client, url: &str, body: Value) -> Response {
    client
        .post(format!("{url}/hub/api/messages"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_body_that_is_not_the_json_the_hub_takes_is_a_400_with_a_json_error() {
    let (_world, url) = served().await;
    let client = Client::new();
    let endpoint = format!("{url}/hub/api/messages");
    for body in [
        "{not json",
        "",
        "[]",
        r#"{"text": 5}"#,
        r#"{"channel": "general"}"#,
    ] {
        let response = client
            .post(&endpoint)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        refused(response, StatusCode::BAD_REQUEST).await;
    }
    // A field the hub does not know, and no JSON content type at all.
    let unknown = json!({"text": "hi", "channel": "general", "as": "alpha"});
    refused(post(&client, &url, unknown).await, StatusCode::BAD_REQUEST).await;
    let untyped = client
        .post(&endpoint)
        .body(r#"{"text": "hi", "channel": "general"}"#)
        .send()
        .await
        .unwrap();
    refused(untyped, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    let collaborate = client
        .post(format!("{url}/hub/api/collaborate"))
        .json(&json!({"target": ["beta"], "text": "x"}))
        .send()
        .await
        .unwrap();
    refused(collaborate, StatusCode::BAD_REQUEST).await;
    let limit = client
        .get(format!("{url}/hub/api/messages?channel=general&limit=lots"))
        .send()
        .await
        .unwrap();
    refused(limit, StatusCode::BAD_REQUEST).await;
}

#[tokio::test]
async fn an_unknown_channel_or_thread_is_a_404() {
    let (world, url) = served().await;
    let client = Client::new();
    let get = |path: &str| client.get(format!("{url}/hub/api/{path}")).send();
    let message = refused(
        get("threads?channel=nowhere").await.unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;
    assert!(message.contains("nowhere"), "{message}");
    refused(
        get("messages?channel=nowhere").await.unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;
    refused(
        get("messages?thread=no-such-thread").await.unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;
    // The live feed of a channel that is not there does not wait forever.
    refused(
        get("events?channel=nowhere").await.unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;
    let to_channel = json!({"text": "hi", "channel": "nowhere"});
    refused(post(&client, &url, to_channel).await, StatusCode::NOT_FOUND).await;
    let to_thread = json!({"text": "hi", "thread": "no-such-thread"});
    refused(post(&client, &url, to_thread).await, StatusCode::NOT_FOUND).await;
    let resume = client
        .post(format!("{url}/hub/api/threads/no-such-thread/resume"))
        .bearer_auth(world.hub.operator_token())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    refused(resume, StatusCode::NOT_FOUND).await;
    // Nothing was stored on the way.
    assert!(world.channel_messages("general").await.is_empty());
    assert!(world.hub.threads(None).is_empty());
}

#[tokio::test]
async fn a_person_cannot_post_as_an_agent_or_the_hub() {
    let (world, url) = served().await;
    let client = Client::new();
    for name in ["alpha", "hub", world.hub.name()] {
        let body = json!({"text": "trust me", "channel": "general", "from": name});
        let message = refused(post(&client, &url, body).await, StatusCode::BAD_REQUEST).await;
        assert!(message.contains("agent"), "{message}");
    }
    for name in ["x".repeat(65), "ann\u{7}".to_owned()] {
        let body = json!({"text": "hi", "channel": "general", "from": name});
        refused(post(&client, &url, body).await, StatusCode::BAD_REQUEST).await;
    }
    let collaborate = client
        .post(format!("{url}/hub/api/collaborate"))
        .json(&json!({"target": "beta", "text": "review", "from": "alpha"}))
        .send()
        .await
        .unwrap();
    refused(collaborate, StatusCode::BAD_REQUEST).await;
    world.hub.wait_idle().await;
    assert!(world.calls.all().is_empty(), "{:?}", world.calls.all());
    assert!(world.channel_messages("general").await.is_empty());
}

#[tokio::test]
async fn a_text_over_64_kib_or_without_words_is_a_400() {
    let (world, url) = served().await;
    let client = Client::new();
    let long = "a".repeat(MAX_TEXT_BYTES + 1);
    let body = json!({"text": long, "channel": "general"});
    let message = refused(post(&client, &url, body).await, StatusCode::BAD_REQUEST).await;
    assert!(message.contains("at most"), "{message}");
    for text in ["", "   \n\t"] {
        let body = json!({"text": text, "channel": "general"});
        refused(post(&client, &url, body).await, StatusCode::BAD_REQUEST).await;
    }
    // Right at the limit it is taken.
    let full = json!({"text": "b".repeat(MAX_TEXT_BYTES), "channel": "ops"});
    let (status, body) = answer(post(&client, &url, full).await).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(world.channel_messages("general").await.len(), 0);
}

/// Server-sent events as they come: `(event, data)`.
struct Feed {
    events: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Feed {
    async fn open(client: &Client, url: &str, query: &str) -> Feed {
        let response = client
            .get(format!("{url}/hub/api/events{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let kind = response.headers()["content-type"].to_str().unwrap();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Feed {
            events: response
                .bytes_stream()
                .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next event, within 10 seconds.
    async fn next(&mut self) -> (String, Value) {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let mut event = "message".to_owned();
                    let mut data = String::new();
                    for line in block.lines() {
                        if let Some(name) = line.strip_prefix("event:") {
                            event = name.trim().to_owned();
                        } else if let Some(part) = line.strip_prefix("data:") {
                            data.push_str(part.strip_prefix(' ').unwrap_or(part));
                        }
                    }
                    if !data.is_empty() {
                        return (event, serde_json::from_str(&data).unwrap());
                    }
                    continue;
                }
                let chunk = self.events.next().await.expect("the feed ended").unwrap();
                self.buffer.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .expect("no event within 10 s")
    }

    /// Skips events until `wanted` says yes.
    async fn until(&mut self, mut wanted: impl FnMut(&str, &Value) -> bool) -> Value {
        loop {
            let (event, data) = self.next().await;
            if wanted(&event, &data) {
                return data;
            }
        }
    }
}

#[tokio::test]
async fn the_live_feed_delivers_a_posted_message_and_a_thread_event() {
    let (world, url) = served().await;
    let client = Client::new();
    let mut all = Feed::open(&client, &url, "").await;
    let mut ops_only = Feed::open(&client, &url, "?channel=ops").await;

    let body = json!({"text": "@alpha hello", "channel": "general", "from": "ann"});
    let (status, posted) = answer(post(&client, &url, body).await).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    let message = all.until(|event, _| event == "message").await;
    assert_eq!(message, posted["message"]);
    assert_eq!(message["from"], json!({"kind": "person", "name": "ann"}));
    assert_eq!(message["mentions"], json!(["alpha"]));
    let reply = all
        .until(|event, m| event == "message" && m["from"]["name"] == "alpha")
        .await;
    assert_eq!(reply["text"], "alpha: alpha hello");
    assert_eq!(reply["replyTo"], posted["message"]["id"]);

    let collaborate = client
        .post(format!("{url}/hub/api/collaborate"))
        .json(&json!({"target": "beta", "text": "review the ops runbook", "channel": "ops"}))
        .send()
        .await
        .unwrap();
    let (status, done) = answer(collaborate).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    let thread_id = done["collaboration"]["thread"].clone();
    let thread = all
        .until(|event, t| event == "thread" && t["id"] == thread_id)
        .await;
    assert_eq!(thread["channel"], "ops");
    assert!(
        thread["participants"]
            .as_array()
            .unwrap()
            .contains(&json!("beta")),
        "{thread}"
    );
    // The feed of ops sees the thread and its messages, nothing of general.
    let mut seen = Vec::new();
    ops_only
        .until(|event, data| {
            seen.push((event.to_owned(), data.clone()));
            event == "message" && data["thread"] == thread_id
        })
        .await;
    assert!(
        seen.iter().all(|(_, data)| data["channel"] == "ops"),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(event, data)| event == "thread" && data["id"] == thread_id),
        "{seen:?}"
    );
    world.hub.wait_idle().await;
}

#[tokio::test]
async fn with_the_gateways_authentication_the_api_wants_the_token_and_the_person_is_its_principal()
{
    let world = world_built(general_and_ops(), team(), None, HashMap::new(), |gateway| {
        gateway.authentication(BearerAuth::new().token("t", Principal::new("ann")))
    })
    .await;
    let url = world.serve().await;
    let client = Client::new();

    // The page itself is public: it asks for the token.
    let page = client.get(format!("{url}/hub")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);

    for token in [None, Some("wrong")] {
        let with = |request: reqwest::RequestBuilder| match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        for request in [
            client.get(format!("{url}/hub/api/channels")),
            client.get(format!("{url}/hub/api/events")),
            client.get(format!("{url}/hub/api/messages?channel=general")),
            client
                .post(format!("{url}/hub/api/messages"))
                .json(&json!({"text": "hi", "channel": "general"})),
            client
                .post(format!("{url}/hub/api/threads/x/resume"))
                .json(&json!({})),
        ] {
            let response = with(request).send().await.unwrap();
            assert!(
                response.headers().contains_key("www-authenticate"),
                "{:?}",
                response.headers()
            );
            refused(response, StatusCode::UNAUTHORIZED).await;
        }
    }
    assert!(world.channel_messages("general").await.is_empty());

    let (status, channels) = answer(
        client
            .get(format!("{url}/hub/api/channels"))
            .bearer_auth("t")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(channels["channels"][0]["name"], "general");
    // Whatever name the body claims, the token says who posts.
    let (status, posted) = answer(
        client
            .post(format!("{url}/hub/api/messages"))
            .bearer_auth("t")
            .json(&json!({"text": "@alpha hi", "channel": "general", "from": "mallory"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    assert_eq!(
        posted["message"]["from"],
        json!({"kind": "person", "name": "ann"})
    );
    world.hub.wait_idle().await;
    // The hub still reaches its agents through the authenticating gateway.
    assert_eq!(world.calls.count("alpha"), 1);
    let messages = world.channel_messages("general").await;
    assert_eq!(messages.last().unwrap().text, "alpha: alpha hi");
}

#[tokio::test]
async fn odd_but_valid_inputs_are_taken_whole_and_odd_queries_are_400s() {
    let (_world, url) = served().await;
    let client = Client::new();
    let text = "nul \u{0} bell \u{7} <script>alert(1)</script> \u{202e}rtl\u{202c} 🦀 'quotes\" \\ @nobody";
    let body = json!({"text": text, "channel": "general", "from": "Zoë 🦀"});
    let (status, posted) = answer(post(&client, &url, body).await).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    let (status, listed) = answer(
        client
            .get(format!("{url}/hub/api/messages?channel=general"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let stored = &listed["messages"][0];
    assert_eq!(stored["text"], text);
    assert_eq!(stored["from"]["name"], "Zoë 🦀");
    assert_eq!(stored["mentions"], json!([]));
    for query in [
        "messages",
        "messages?limit=-1&channel=general",
        "messages?limit=99999999999999999999999&channel=general",
        "messages?channel=general&channel=ops",
    ] {
        let response = client
            .get(format!("{url}/hub/api/{query}"))
            .send()
            .await
            .unwrap();
        refused(response, StatusCode::BAD_REQUEST).await;
    }
}

#[tokio::test]
async fn the_page_is_html_at_hub_beside_the_hub_agents_a2a_paths() {
    let (_world, url) = served().await;
    let client = Client::new();
    for path in ["/hub", "/hub/"] {
        let page = client.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(page.status(), StatusCode::OK, "{path}");
        let kind = page.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(kind.starts_with("text/html"), "{kind}");
        let html = page.text().await.unwrap();
        assert!(html.contains(r#"id="post-text""#), "{path}");
        // Nothing from elsewhere: no script, style or font by URL.
        assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("src="));
    }
    // Beside it, the hub agent's A2A paths (its tenant at the root) still
    // answer: listing its tasks, say.
    let tasks = client
        .get(format!("{url}/hub/tasks"))
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap();
    let status = tasks.status();
    let body = tasks.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("tasks"), "{body}");
}

/// What a page on another site can make a visitor's browser send: a form
/// post (no JSON, no custom header), or a call with that site's `Origin`.
/// Neither changes the hub, without authentication too.
#[tokio::test]
async fn a_cross_site_page_cannot_resume_post_or_collaborate() {
    let (world, url) = served().await;
    let done = paused_thread(&world).await;
    let before = world.channel_messages("general").await.len();
    let client = Client::new();
    let resume = format!("{url}/hub/api/threads/{}/resume", done.thread);
    // A form post, with or without a body.
    for form in [
        client.post(&resume),
        client
            .post(&resume)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("a=1"),
        client
            .post(&resume)
            .header("content-type", "text/plain")
            .body("{}"),
    ] {
        let message = refused(
            form.send().await.unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        )
        .await;
        assert!(message.contains("JSON"), "{message}");
    }
    for endpoint in ["messages", "collaborate"] {
        let form = client
            .post(format!("{url}/hub/api/{endpoint}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("text=hi&target=beta")
            .send()
            .await
            .unwrap();
        refused(form, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    }
    // JSON from another site's page.
    let foreign = client
        .post(&resume)
        .header("origin", "http://evil.example")
        .bearer_auth(world.hub.operator_token())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    refused(foreign, StatusCode::FORBIDDEN).await;
    let foreign = client
        .post(format!("{url}/hub/api/messages"))
        .header("origin", "http://evil.example")
        .json(&json!({"text": "hi", "channel": "general"}))
        .send()
        .await
        .unwrap();
    refused(foreign, StatusCode::FORBIDDEN).await;
    assert!(world.hub.thread(&done.thread).unwrap().paused);
    assert_eq!(world.channel_messages("general").await.len(), before);
    // The hub's own page (its origin), and a script's custom header, may.
    let own = url.trim_end_matches('/').to_owned();
    let token = world.hub.operator_token().to_owned();
    let (status, body) = answer(
        client
            .post(&resume)
            .header("origin", own)
            .bearer_auth(&token)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!world.hub.thread(&done.thread).unwrap().paused);
    let (status, body) = answer(
        client
            .post(&resume)
            .header(a2a_hub::http::HUB_REQUEST_HEADER, "1")
            .bearer_auth(&token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Names that read as an agent's are an agent's: other case, lookalike
/// letters, invisible characters, an account, an `agent:` id.
#[tokio::test]
async fn a_person_cannot_post_under_a_name_that_reads_as_an_agents() {
    let mut config = general_and_ops();
    config.accounts.insert("default".into(), "alpha".into());
    let world = world(config, team()).await;
    let url = world.serve().await;
    let client = Client::new();
    for name in [
        "Alpha",
        "ALPHA",
        "\u{0430}lpha",
        "alpha\u{200B}",
        "al\u{200D}pha",
        "default",
        "Default",
        "agent:alpha",
        "Agent:ann",
        "HUB",
        "\u{200B}",
    ] {
        let body = json!({"text": "trust me", "channel": "general", "from": name});
        refused(post(&client, &url, body).await, StatusCode::BAD_REQUEST).await;
    }
    // A person's own name is still theirs.
    let body = json!({"text": "hello", "channel": "general", "from": "Ann"});
    let (status, body) = answer(post(&client, &url, body).await).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// The thread list comes in pages of at most 1,000, each pointing at the
/// next, and a cursor the hub did not give is a 400.
#[tokio::test]
async fn the_thread_list_pages_and_is_bounded() {
    let (world, url) = served().await;
    let pairs = [
        ("alpha", "beta"),
        ("alpha", "gamma"),
        ("beta", "gamma"),
        ("delta", "beta"),
        ("gamma", "delta"),
    ];
    for (opener, target) in pairs {
        world
            .hub
            .collaborate(
                a2a_hub::Sender::Agent(opener.into()),
                a2a_hub::Collaborate::new(target, "a question"),
            )
            .await
            .unwrap();
    }
    world.hub.wait_idle().await;
    let client = Client::new();
    let mut seen = Vec::new();
    let mut query = "limit=2".to_owned();
    for page in 0.. {
        let (status, body) = answer(
            client
                .get(format!("{url}/hub/api/threads?{query}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let threads = body["threads"].as_array().unwrap();
        assert!(threads.len() <= 2, "{body}");
        seen.extend(threads.iter().map(|t| t["id"].as_str().unwrap().to_owned()));
        match body["nextCursor"].as_str() {
            Some(cursor) => {
                assert!(page < 3, "more pages than threads");
                query = format!("limit=2&cursor={}", urlencode(cursor));
            }
            None => break,
        }
    }
    let all: Vec<String> = world.hub.threads(None).into_iter().map(|t| t.id).collect();
    assert_eq!(all.len(), 5);
    assert_eq!(seen, all, "every thread once, most recent first");
    // A huge limit is held to the bound; an odd cursor is refused.
    let (_, body) = answer(
        client
            .get(format!("{url}/hub/api/threads?limit=1000000"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(body["threads"].as_array().unwrap().len(), 5);
    let odd = client
        .get(format!("{url}/hub/api/threads?cursor=nonsense"))
        .send()
        .await
        .unwrap();
    refused(odd, StatusCode::BAD_REQUEST).await;
    // The API client reads every page.
    let api = a2a_hub::api::HubApiClient::new(&url).unwrap();
    let listed: Vec<String> = api
        .threads(None)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, all);
}

fn urlencode(text: &str) -> String {
    serde_urlencoded::to_string([("c", text)]).unwrap()[2..].to_owned()
}

/// Without authentication anyone who reaches the port is "a person": to
/// lift a pause they must hold the operator token, which the hub keeps in
/// its directory. An agent never may, its secret or not, and over A2A only
/// an authenticated person may.
#[tokio::test]
async fn resuming_without_authentication_takes_the_operator_token() {
    let (world, url) = served().await;
    let done = paused_thread(&world).await;
    let client = Client::new();
    let resume = format!("{url}/hub/api/threads/{}/resume", done.thread);
    for token in [
        None,
        Some("not-the-token"),
        Some(&world.hub.operator_token()[..63]),
    ] {
        let mut request = client.post(&resume).json(&json!({}));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert!(response.headers().contains_key("www-authenticate"));
        let message = refused(response, StatusCode::UNAUTHORIZED).await;
        assert!(message.contains("operator token"), "{message}");
    }
    // Over A2A, an anonymous person is refused too.
    let endpoint = format!("{url}/agents/hub");
    let hub = a2a_client::Client::from_transport(
        a2a_client::JsonRpcTransport::new(endpoint.clone()),
        a2a_core::AgentInterface::new(endpoint, a2a_core::binding::JSONRPC),
    );
    let asked = a2a_core::Message::user(vec![a2a_core::Part::data(
        json!({ "resume": { "thread": done.thread } }),
    )]);
    let sent = hub
        .send_message(a2a_core::SendMessageRequest::new(asked), None)
        .await
        .unwrap();
    let a2a_core::SendMessageResponse::Task(task) = sent else {
        panic!("a refusal is a failed task");
    };
    assert_eq!(task.status.state, a2a_core::TaskState::Failed);
    assert!(world.hub.thread(&done.thread).unwrap().paused);
    // The operator's token does it.
    let (status, body) = answer(
        client
            .post(&resume)
            .bearer_auth(world.hub.operator_token())
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!world.hub.thread(&done.thread).unwrap().paused);
}

/// Alpha and beta answering each other until the loop guard pauses their
/// thread: its collaboration.
async fn paused_thread(world: &World) -> a2a_hub::Collaboration {
    let done = world
        .hub
        .collaborate(
            a2a_hub::Sender::Agent("alpha".into()),
            a2a_hub::Collaborate::new("beta", "review the code"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(world.hub.thread(&done.thread).unwrap().paused);
    done
}

/// `POST /hub/api/collaborate` as person `from`, asking `target`.
async fn collaborate_as(client: &Client, url: &str, from: &str, target: &str) -> Response {
    client
        .post(format!("{url}/hub/api/collaborate"))
        .json(&json!({"target": target, "text": "a question", "from": from}))
        .send()
        .await
        .unwrap()
}

/// Without authentication a new name per call changes nothing: the pair
/// guard counts the address the calls come from.
#[tokio::test]
async fn the_pair_guard_counts_the_callers_address_not_the_name_it_chooses() {
    let (world, url) = served().await;
    let client = Client::new();
    for i in 1..=3 {
        let response = collaborate_as(&client, &url, &format!("mallory{i}"), "beta").await;
        let (status, body) = answer(response).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let response = collaborate_as(&client, &url, "mallory4", "beta").await;
    assert!(response.headers().contains_key("retry-after"));
    let message = refused(response, StatusCode::TOO_MANY_REQUESTS).await;
    assert!(message.contains("asked beta 3 times"), "{message}");
    world.hub.wait_idle().await;
}

/// Callers without authentication open a bounded number of threads (each
/// sets an agent off) from one address, whatever names and targets.
#[tokio::test]
async fn anonymous_callers_open_a_bounded_number_of_threads() {
    let mut config = general_and_ops();
    config.operator_channel = Some("ops".into());
    let world = world(config, team()).await;
    let url = world.serve().await;
    let client = Client::new();
    let targets = ["alpha", "beta", "gamma", "delta", "alpha"];
    for (i, target) in targets.into_iter().enumerate() {
        let response = collaborate_as(&client, &url, &format!("visitor{i}"), target).await;
        let (status, body) = answer(response).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let response = collaborate_as(&client, &url, "visitor9", "beta").await;
    let message = refused(response, StatusCode::TOO_MANY_REQUESTS).await;
    assert!(message.contains("open at most 5 threads"), "{message}");
    world.hub.wait_idle().await;
    assert_eq!(world.hub.threads(None).len(), 5);
    // The operator hears of it.
    let ops = world.channel_messages("ops").await;
    assert!(
        ops.iter()
            .any(|m| m.text.contains("open at most 5 threads")),
        "{ops:#?}"
    );
}

/// Over HTTP/2 the host is the request's `:authority` (there is no `Host`
/// header): the hub's own origin is still its own.
#[tokio::test]
async fn the_hubs_own_origin_is_recognised_over_http2() {
    let (world, url) = served().await;
    let done = paused_thread(&world).await;
    let h2 = Client::builder().http2_prior_knowledge().build().unwrap();
    let response = h2
        .post(format!("{url}/hub/api/threads/{}/resume", done.thread))
        .header("origin", url.trim_end_matches('/'))
        .bearer_auth(world.hub.operator_token())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let foreign = h2
        .post(format!("{url}/hub/api/messages"))
        .header("origin", "http://evil.example")
        .json(&json!({"text": "hi", "channel": "general"}))
        .send()
        .await
        .unwrap();
    refused(foreign, StatusCode::FORBIDDEN).await;
}
