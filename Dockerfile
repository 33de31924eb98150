# The operator's image, for those who build with a container engine and push to a registry. Without
# one, `make image` builds the same image (the last stage's USER, ENTRYPOINT and CMD, the binary at the
# same path, the libraries and CA certificates of Debian 12) from the release binary; tests/image.rs
# keeps both in step: every file the build reads is copied in the first stage.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml build.rs ./
COPY tools/link-order/hot-functions.txt tools/link-order/hot-functions.txt
COPY machine machine
COPY src src
COPY benches benches
COPY tests tests
COPY examples examples
RUN cargo build --release --locked --bin blueprint-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/blueprint-operator /usr/local/bin/blueprint-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/blueprint-operator"]
CMD ["run"]
