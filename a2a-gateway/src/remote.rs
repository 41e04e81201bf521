//! Agents that live elsewhere: the gateway forwards to a remote A2A agent.
