//! Who handles a message and who only observes it: the handler/observer
//! split, decided from the mentions, the place and the sender alone.

use crate::model::{Role, Sender};

/// The agents `text` mentions (`@name`), in order, each once. Only names
/// for which `is_agent` holds count: `@someone` who is no agent is text. A
/// mention starts the text or follows a character that is not part of a
/// name, so an e-mail address mentions nobody.
pub fn mentions(text: &str, is_agent: impl Fn(&str) -> bool) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found: Vec<String> = Vec::new();
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let mut at = 0;
    while let Some(offset) = memchr_at(bytes, at) {
        let start = offset + 1;
        at = start;
        if offset > 0 && is_name(bytes[offset - 1]) {
            continue;
        }
        let end = bytes[start..]
            .iter()
            .position(|b| !is_name(*b))
            .map_or(bytes.len(), |n| start + n);
        // A name ends a sentence as often as not: "ask @beta-" is "beta".
        let name = text[start..end].trim_end_matches(['-', '_']);
        if !name.is_empty() && is_agent(name) && !found.iter().any(|f| f == name) {
            found.push(name.to_owned());
        }
        at = end;
    }
    found
}

fn memchr_at(bytes: &[u8], from: usize) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|b| *b == b'@')
        .map(|n| from + n)
}

/// Where a message is posted, as routing needs to know it.
#[derive(Debug, Clone, Copy)]
pub enum Place<'a> {
    /// At channel level.
    Channel {
        /// The channel's default agent.
        default_agent: Option<&'a str>,
        /// The agents in the channel.
        members: &'a [String],
    },
    /// In a thread.
    Thread {
        /// Its participants.
        participants: &'a [String],
        /// The agents in its channel.
        members: &'a [String],
    },
}

/// Who handles a message, who observes it, and who joins its thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// The agents called, in order, with what each is asked to do.
    pub handlers: Vec<(String, Role)>,
    /// The agents that only keep a compact record.
    pub observers: Vec<String>,
    /// Agents mentioned in a thread they were not part of: participants
    /// from now on.
    pub joined: Vec<String>,
}

/// Decides who handles a message of `sender` that mentions `mentions`
/// (agents only, in order) at `place`.
///
/// - Mentioned agents handle it: the first as primary, the rest as
///   secondaries. In a thread they become participants, as does an agent
///   that writes there.
/// - With no mention, in a thread, every participant handles it.
/// - With no mention, at channel level, the channel's default agent handles
///   a person's message. An agent's own message there reaches only the
///   agents it mentions: a default agent answering every other agent would
///   keep two agents talking forever.
/// - The sender never handles its own message; the hub's own messages
///   reach nobody.
/// - Every other agent of the channel (and of the thread) observes.
pub fn decide(sender: &Sender, mentions: &[String], place: Place<'_>) -> Decision {
    if matches!(sender, Sender::Hub) {
        return Decision::default();
    }
    let own = sender.agent();
    let not_sender = |name: &&String| Some(name.as_str()) != own;
    let mentioned: Vec<&String> = mentions.iter().filter(not_sender).collect();
    let handlers: Vec<(String, Role)> = match (mentioned.is_empty(), place) {
        (false, _) => mentioned
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let role = if i == 0 {
                    Role::Primary
                } else {
                    Role::Secondary
                };
                ((*name).clone(), role)
            })
            .collect(),
        (true, Place::Thread { participants, .. }) => participants
            .iter()
            .filter(not_sender)
            .map(|name| (name.clone(), Role::Participant))
            .collect(),
        (true, Place::Channel { default_agent, .. }) => match (sender, default_agent) {
            (Sender::Person(_), Some(agent)) => vec![(agent.to_owned(), Role::Default)],
            _ => Vec::new(),
        },
    };
    let (members, participants): (&[String], &[String]) = match place {
        Place::Channel { members, .. } => (members, &[]),
        Place::Thread {
            participants,
            members,
        } => (members, participants),
    };
    // An agent that writes in a thread takes part in it, as does one
    // mentioned there: after a participant record is lost, talk rebuilds it.
    let joined = match place {
        Place::Thread { participants, .. } => own
            .map(str::to_owned)
            .into_iter()
            .chain(mentioned.iter().map(|m| (*m).clone()))
            .filter(|name| !participants.contains(name))
            .collect(),
        Place::Channel { .. } => Vec::new(),
    };
    let mut observers: Vec<String> = Vec::new();
    for name in members.iter().chain(participants) {
        let handles = handlers.iter().any(|(h, _)| h == name);
        if !handles && Some(name.as_str()) != own && !observers.contains(name) {
            observers.push(name.clone());
        }
    }
    Decision {
        handlers,
        observers,
        joined,
    }
}

/// The role [`decide`] gave `agent`, a handler of a message of `sender`
/// that mentions `mentions`, in a thread or not: what a delivery on record
/// (which keeps the message, not its decision) is sent as again.
pub(crate) fn role_of(sender: &Sender, mentions: &[String], agent: &str, in_thread: bool) -> Role {
    let own = sender.agent();
    let first = mentions.iter().find(|name| Some(name.as_str()) != own);
    match first {
        Some(first) if first == agent => Role::Primary,
        Some(_) => Role::Secondary,
        None if in_thread => Role::Participant,
        None => Role::Default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_of_a_handler_is_the_one_routing_gave_it() {
        let members = names(&["alpha", "beta", "gamma"]);
        let participants = names(&["alpha", "gamma"]);
        let ann = Sender::Person("ann".into());
        let alpha = Sender::Agent("alpha".into());
        for (sender, mentioned) in [
            (&ann, names(&["beta", "gamma"])),
            (&alpha, names(&["alpha", "gamma", "beta"])),
            (&alpha, names(&["beta"])),
            (&ann, names(&[])),
            (&alpha, names(&[])),
        ] {
            for place in [
                Place::Channel {
                    default_agent: Some("beta"),
                    members: &members,
                },
                Place::Thread {
                    participants: &participants,
                    members: &members,
                },
            ] {
                let in_thread = matches!(place, Place::Thread { .. });
                for (agent, role) in decide(sender, &mentioned, place).handlers {
                    assert_eq!(
                        role_of(sender, &mentioned, &agent, in_thread),
                        role,
                        "{agent} of {sender:?} mentioning {mentioned:?}"
                    );
                }
            }
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn agents(name: &str) -> bool {
        ["alpha", "beta", "gamma", "delta"].contains(&name)
    }

    #[test]
    fn mentions_are_agent_names_after_an_at_sign() {
        assert_eq!(
            mentions("@alpha @beta look, @alpha again", agents),
            names(&["alpha", "beta"])
        );
        assert_eq!(mentions("mail me@alpha.org", agents), names(&[]));
        assert_eq!(mentions("ask @beta-, then @zeta", agents), names(&["beta"]));
        assert_eq!(mentions("(@gamma)", agents), names(&["gamma"]));
        assert_eq!(mentions("@", agents), names(&[]));
        assert_eq!(mentions("é@alpha", agents), names(&["alpha"]));
    }

    #[test]
    fn a_thread_message_without_a_mention_goes_to_the_other_participants() {
        let members = names(&["alpha", "beta", "gamma", "delta"]);
        let participants = names(&["alpha", "beta"]);
        let decision = decide(
            &Sender::Agent("alpha".into()),
            &[],
            Place::Thread {
                participants: &participants,
                members: &members,
            },
        );
        assert_eq!(
            decision.handlers,
            vec![("beta".to_owned(), Role::Participant)]
        );
        assert_eq!(decision.observers, names(&["gamma", "delta"]));
    }

    #[test]
    fn an_agents_channel_message_without_a_mention_reaches_nobody() {
        let members = names(&["alpha", "beta"]);
        let place = Place::Channel {
            default_agent: Some("alpha"),
            members: &members,
        };
        assert!(
            decide(&Sender::Agent("beta".into()), &[], place)
                .handlers
                .is_empty()
        );
        assert_eq!(
            decide(&Sender::Person("ann".into()), &[], place).handlers,
            vec![("alpha".to_owned(), Role::Default)]
        );
        assert!(
            decide(&Sender::Hub, &names(&["alpha"]), place)
                .handlers
                .is_empty()
        );
    }
}
