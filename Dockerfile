# probe in a container: the static binary alone (musl, the `dist` profile), nothing else.
#   docker build -t probe .
#   docker run --rm probe demo
#   docker run --rm -v "$PWD:/work" --network host probe run --spec openapi.yaml --url http://127.0.0.1:8080
# The store, reports and probe.toml are those of the mounted /work.
FROM rust:1-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN cargo build --locked --profile dist && strip target/dist/probe

FROM scratch
COPY --from=build /src/target/dist/probe /probe
WORKDIR /work
ENV TMPDIR=/work
ENTRYPOINT ["/probe"]
