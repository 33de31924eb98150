# Multi-stage build: compile with the Rust toolchain, ship the binary on a distroless non-root base.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml ./
COPY machine machine
COPY src src
COPY benches benches
COPY tests tests
RUN cargo build --release --locked --bin blueprint-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/blueprint-operator /usr/local/bin/blueprint-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/blueprint-operator"]
CMD ["run"]
