//! Calls an agent that requires JWTs (`jwt_agent`): with no token, with a
//! token signed by another key, with an expired one (each refused), then
//! with a good one.
//!
//! Run with: `A2A_JWT_SECRET=demo-secret cargo run -p examples --bin jwt_client -- http://127.0.0.1:8080`
//! (start `jwt_agent` first; `A2A_JWT_SECRET` defaults to `demo-secret`).
//!
//! A real client gets its token from the identity provider (an OAuth 2.0
//! client-credentials grant, say); this one signs its own with the secret
//! of `jwt_agent`'s stand-in provider.

use std::time::{SystemTime, UNIX_EPOCH};

use a2a_client::{AuthInterceptor, Client, ClientBuilder};
use a2a_core::SendMessageResponse;
use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// A token for `subject`, signed with `secret`, valid for `lifetime_secs`
/// from now (negative: expired that long ago).
fn token(secret: &str, subject: &str, lifetime_secs: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    let claims = serde_json::json!({
        "sub": subject,
        "aud": "greeter",
        "iss": "demo-idp",
        "iat": now,
        "exp": now + lifetime_secs,
    });
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("demo".into());
    jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("HS256 signs any claims")
}

/// The agent's answer to "hi" with `token`, or why it refused.
async fn ask(url: &str, token: Option<String>) -> Result<String, a2a_client::ClientError> {
    let mut builder = ClientBuilder::new();
    if let Some(token) = token {
        // The interceptor puts the credential where the card's scheme says:
        // for the "jwt" scheme, an `Authorization: Bearer` header.
        builder = builder.interceptor(AuthInterceptor::new().credential("jwt", token));
    }
    let client: Client = builder.connect(url).await?;
    Ok(match client.send_text("hi").await? {
        SendMessageResponse::Task(task) => {
            task.status.message.map(|m| m.text()).unwrap_or_default()
        }
        SendMessageResponse::Message(message) => message.text(),
    })
}

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let secret = std::env::var("A2A_JWT_SECRET").unwrap_or_else(|_| "demo-secret".into());
    let attempts = [
        ("no token", None),
        ("another key", Some(token("not-the-secret", "mallory", 300))),
        ("expired", Some(token(&secret, "alice", -3600))),
    ];
    for (what, token) in attempts {
        match ask(&url, token).await {
            Ok(answer) => println!("{what}: answered ({answer})"),
            Err(err) => println!("{what}: refused ({err})"),
        }
    }
    let answer = ask(&url, Some(token(&secret, "alice", 300))).await?;
    println!("good token: {answer}");
    Ok(())
}
