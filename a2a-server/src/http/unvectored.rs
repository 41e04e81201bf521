//! A connection that tells HTTP/2 to copy small payloads, so that an
//! answer leaves in one write.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection's byte stream that reports no vectored writes, which is how
/// [`serve`](super::serve) hands every connection to hyper.
///
/// hyper's HTTP/2 codec (`h2`) writes a DATA frame's payload of more than
/// 256 bytes as a buffer of its own when the stream can write vectored, and
/// while such a payload waits it takes no further frame. A unary gRPC answer
/// (HEADERS, one DATA frame of a few hundred bytes, then the trailers) so
/// costs two system calls, the second for the trailers' ten bytes. On a
/// stream without vectored writes the codec copies payloads of up to 1 KiB
/// instead, and the whole answer leaves in one: on one core that served
/// 25–46% more gRPC SendMessage calls a second. HTTP/1.1 answers take one write
/// either way (hyper copies the body after the head instead of handing both
/// to `writev`). A payload above 1 KiB costs one write for the frame header
/// and one for the payload instead of a single `writev`.
///
/// For a server of its own on hyper or `h2`:
///
/// ```no_run
/// # async fn run(listener: tokio::net::TcpListener) -> std::io::Result<()> {
/// let (stream, _) = listener.accept().await?;
/// let io = hyper_util::rt::TokioIo::new(a2a_server::http::Unvectored::new(stream));
/// # drop(io);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Unvectored<S> {
    inner: S,
}

impl<S> Unvectored<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Unvectored { inner }
    }

    /// The wrapped stream.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Unvectored<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Unvectored<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use http_body_util::{BodyExt as _, StreamBody};
    use hyper::body::Frame;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::io::{DuplexStream, Join, ReadHalf, WriteHalf};

    use super::*;

    /// The writing half of a stream, which writes vectored and counts the
    /// calls that write.
    struct CountedWrites {
        inner: WriteHalf<DuplexStream>,
        writes: Arc<AtomicUsize>,
    }

    impl AsyncWrite for CountedWrites {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.writes.fetch_add(1, Ordering::SeqCst);
            Pin::new(&mut self.inner).poll_write(cx, buf)
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            self.writes.fetch_add(1, Ordering::SeqCst);
            // As `writev` does: every slice in one call.
            let joined: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            Pin::new(&mut self.inner).poll_write(cx, &joined)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// The writes an HTTP/2 server makes for one answer shaped like a unary
    /// gRPC call's (HEADERS, 400 bytes of DATA, trailers), with the server's
    /// stream wrapped by `wrap`.
    async fn writes_for_one_answer<W>(
        wrap: impl FnOnce(Join<ReadHalf<DuplexStream>, CountedWrites>) -> W,
    ) -> usize
    where
        W: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let writes = Arc::new(AtomicUsize::new(0));
        let (reads, inner) = tokio::io::split(server_end);
        let server_io = wrap(tokio::io::join(
            reads,
            CountedWrites {
                inner,
                writes: writes.clone(),
            },
        ));
        let service = hyper::service::service_fn(|_request| async {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            let frames = futures::stream::iter([
                Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(vec![7u8; 400]))),
                Ok(Frame::trailers(trailers)),
            ]);
            Ok::<_, std::convert::Infallible>(hyper::Response::new(StreamBody::new(frames)))
        });
        tokio::spawn(
            hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(server_io), service),
        );
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(client_end))
                .await
                .unwrap();
        tokio::spawn(connection);
        let mut call = async || {
            let request = hyper::Request::post("http://localhost/a2a.v1.A2AService/SendMessage")
                .body(http_body_util::Full::new(Bytes::from_static(b"call")))
                .unwrap();
            let answer = sender.send_request(request).await.unwrap();
            let collected = answer.into_body().collect().await.unwrap();
            assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
        };
        // A first call settles the handshake's SETTINGS and their acks.
        call().await;
        let before = writes.load(Ordering::SeqCst);
        call().await;
        writes.load(Ordering::SeqCst) - before
    }

    #[tokio::test]
    async fn a_unary_grpc_answer_leaves_in_one_write() {
        assert_eq!(writes_for_one_answer(Unvectored::new).await, 1);
    }

    /// What the wrapper is for: on a vectored stream the trailers go alone.
    #[tokio::test]
    async fn on_a_vectored_stream_the_trailers_take_a_second_write() {
        assert_eq!(writes_for_one_answer(|io| io).await, 2);
    }

    #[tokio::test]
    async fn reads_and_writes_pass_through() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let (a, b) = tokio::io::duplex(64);
        let (mut a, mut b) = (Unvectored::new(a), Unvectored::new(b));
        assert!(!a.is_write_vectored());
        a.write_all(b"ping").await.unwrap();
        a.flush().await.unwrap();
        let mut got = [0u8; 4];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        a.shutdown().await.unwrap();
        let mut b = b.into_inner();
        assert_eq!(b.read(&mut got).await.unwrap(), 0);
    }
}
