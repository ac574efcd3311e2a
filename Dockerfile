# The xdsck image the DaemonSet in deploy/kubernetes runs (`image: xdsck`): the release binary
# on distroless cc (glibc, no shell), as user nonroot (65532). Never built here (no container
# runtime on the test machine): `docker build -t <registry>/xdsck:<tag> .` from the repo root.
# The toolchain the repository is tested with (rustc 1.95).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# --locked: the dependencies the lock file pins, as CI tests them.
RUN cargo build --release --locked -p xdsck && strip target/release/xdsck

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/xdsck /usr/local/bin/xdsck
USER 65532:65532
EXPOSE 9967
ENTRYPOINT ["/usr/local/bin/xdsck"]
CMD ["attach", "unix:///var/run/cilium/envoy/sockets/admin.sock", "--watch", "--format=json", "--metrics=0.0.0.0:9967"]
