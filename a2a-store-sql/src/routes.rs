//! The conversation index kept in a PostgreSQL store's schema (migration
//! 0005's `conversation_routes`): a [`RouteStore`] for
//! [`ConversationIndex::open_store`](a2a_conversation::ConversationIndex::open_store).

use std::sync::Arc;

use a2a_conversation::{IndexError, Route, RouteKey, RouteStore};
use chrono::{DateTime, Utc};

use crate::PostgresStore;

fn store_error(err: sqlx::Error) -> IndexError {
    IndexError::Store(err.to_string())
}

#[async_trait::async_trait]
impl RouteStore for PostgresStore {
    async fn load(&self) -> Result<Vec<(RouteKey, Route)>, IndexError> {
        let rows: Vec<(String, String, Option<String>, String, i64)> = sqlx::query_as(
            "SELECT route, context_id, task_id, last_event, updated_us FROM conversation_routes",
        )
        .fetch_all(self.pool())
        .await
        .map_err(store_error)?;
        Ok(rows
            .into_iter()
            .filter_map(|(route, context_id, task_id, last_event, updated_us)| {
                let key = RouteKey::parse(&route);
                if key.is_none() {
                    tracing::warn!(%route, "skipping an unreadable conversation route");
                }
                Some((
                    key?,
                    Route {
                        context_id,
                        task_id,
                        last_event,
                        updated_at: DateTime::<Utc>::from_timestamp_micros(updated_us)
                            .unwrap_or_default(),
                    },
                ))
            })
            .collect())
    }

    async fn get(&self, key: &RouteKey) -> Result<Option<Route>, IndexError> {
        let row: Option<(String, Option<String>, String, i64)> = sqlx::query_as(
            "SELECT context_id, task_id, last_event, updated_us FROM conversation_routes WHERE route = $1",
        )
        .bind(key.as_str())
        .fetch_optional(self.pool())
        .await
        .map_err(store_error)?;
        Ok(
            row.map(|(context_id, task_id, last_event, updated_us)| Route {
                context_id,
                task_id,
                last_event,
                updated_at: DateTime::<Utc>::from_timestamp_micros(updated_us).unwrap_or_default(),
            }),
        )
    }

    async fn upsert(&self, routes: &[(RouteKey, Arc<Route>)]) -> Result<(), IndexError> {
        let mut keys = Vec::with_capacity(routes.len());
        let mut contexts = Vec::with_capacity(routes.len());
        let mut tasks = Vec::with_capacity(routes.len());
        let mut events = Vec::with_capacity(routes.len());
        let mut times = Vec::with_capacity(routes.len());
        for (key, route) in routes {
            keys.push(key.as_str().to_owned());
            contexts.push(route.context_id.clone());
            tasks.push(route.task_id.clone());
            events.push(route.last_event.clone());
            times.push(route.updated_at.timestamp_micros());
        }
        // One statement for the batch; an older write never replaces a newer row.
        sqlx::query(
            "INSERT INTO conversation_routes (route, context_id, task_id, last_event, updated_us)
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
             ON CONFLICT (route) DO UPDATE SET context_id = EXCLUDED.context_id,
                 task_id = EXCLUDED.task_id, last_event = EXCLUDED.last_event,
                 updated_us = EXCLUDED.updated_us
             WHERE conversation_routes.updated_us <= EXCLUDED.updated_us",
        )
        .bind(keys)
        .bind(contexts)
        .bind(tasks)
        .bind(events)
        .bind(times)
        .execute(self.pool())
        .await
        .map_err(store_error)?;
        Ok(())
    }
}
