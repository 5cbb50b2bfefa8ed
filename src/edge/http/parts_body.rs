//! A response body written from parts held elsewhere (a head made for this answer, then bytes
//! shared with every other answer like it), so nothing is copied to join them; its length is
//! known, so it goes with a Content-Length.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use bytes::Bytes;

pub struct Parts {
    parts: [Bytes; 2],
    next: usize,
}

impl Parts {
    pub fn new(parts: [Bytes; 2]) -> Self {
        Parts { parts, next: 0 }
    }
}

impl MessageBody for Parts {
    type Error = Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.parts[self.next..].iter().map(|p| p.len() as u64).sum())
    }

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Bytes, Infallible>>> {
        let this = self.get_mut();
        while this.next < this.parts.len() {
            let part = std::mem::take(&mut this.parts[this.next]);
            this.next += 1;
            if !part.is_empty() {
                return Poll::Ready(Some(Ok(part)));
            }
        }
        Poll::Ready(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn the_parts_are_written_in_order_with_their_length() {
        let body = Parts::new([Bytes::from_static(b"{\"id\":1"), Bytes::from_static(b",\"result\":{}}")]);
        assert_eq!(body.size(), BodySize::Sized(20));
        let bytes = actix_web::body::to_bytes(body).await.unwrap();
        assert_eq!(&bytes[..], b"{\"id\":1,\"result\":{}}");
        let empty_first = actix_web::body::to_bytes(Parts::new([Bytes::new(), Bytes::from_static(b"x")])).await.unwrap();
        assert_eq!(&empty_first[..], b"x");
    }
}
