// Package apiconv converts the agent's own types (allocation snapshots,
// job records, CSI volumes, fingerprints and registry entries) into the
// HTTP API's wire types, and a volume request into a volume spec. The wire
// types in package api are a deliberate copy, as Nomad's api module is:
// they are what clients decode, and they change only compatibly, while the
// internal types change with the code. Everything here is a pure function,
// so the views are tested without an agent.
package apiconv
