//! `A2aError` <-> `tonic::Status` with a `google.rpc.ErrorInfo` detail.

use std::collections::HashMap;

use a2a_core::{A2aError, ERROR_DOMAIN, ErrorKind, GrpcCode};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

fn to_code(code: GrpcCode) -> Code {
    Code::from_i32(code.number())
}

/// The gRPC status of an A2A error: its code, message, and an ErrorInfo
/// (reason, domain `a2a-protocol.org`, metadata) in `grpc-status-details-bin`.
pub fn to_status(err: &A2aError) -> Status {
    let metadata: HashMap<String, String> = err.metadata().clone().into_iter().collect();
    let details = ErrorDetails::with_error_info(err.kind().reason(), ERROR_DOMAIN, metadata);
    Status::with_error_details(to_code(err.kind().grpc_code()), err.message(), details)
}

/// The A2A error a gRPC status carries: by ErrorInfo reason first, by code
/// only when there is no reason (several errors share a code).
pub fn from_status(status: &Status) -> A2aError {
    let info = status.get_error_details().error_info().cloned();
    if let Some(info) = info {
        let ours = info.domain.is_empty() || info.domain == ERROR_DOMAIN;
        if let (true, Some(kind)) = (ours, ErrorKind::from_reason(&info.reason)) {
            let mut err = A2aError::new(kind, status.message());
            for (key, value) in info.metadata {
                err = err.with_metadata(key, value);
            }
            return err;
        }
    }
    let kind = GrpcCode::from_number(status.code() as i32)
        .and_then(ErrorKind::from_grpc_code)
        .unwrap_or(ErrorKind::Internal);
    A2aError::new(kind, status.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_survives_a_status_round_trip() {
        for kind in ErrorKind::ALL {
            let err = A2aError::new(kind, "boom").with_metadata("taskId", "t-1");
            let status = to_status(&err);
            assert_eq!(status.code() as i32, kind.grpc_code().number());
            assert_eq!(from_status(&status), err, "{kind:?}");
        }
    }

    #[test]
    fn without_error_info_the_code_decides_or_internal() {
        assert_eq!(
            from_status(&Status::not_found("x")).kind(),
            ErrorKind::TaskNotFound
        );
        // FAILED_PRECONDITION is shared by six errors: no guessing.
        assert_eq!(
            from_status(&Status::failed_precondition("x")).kind(),
            ErrorKind::Internal
        );
    }
}
