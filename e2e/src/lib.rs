//! Whole-system tests of the A2A SDK over real sockets, the conformance test
//! agent (`tck-sut`) and interop with other SDKs.
