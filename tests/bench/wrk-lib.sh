# Sourced by recorder.sh, upstream.sh and pg.sh, never run: what the
# benchmarks set up the same way, so that they measure the same callback
# against the same nginx.

# needs PACKAGES TOOL...: exits 2, naming the packages to install, unless
# every TOOL is on PATH.
needs() {
  local packages=$1 tool; shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "needs $tool: apt-get install $packages" >&2; exit 2; }
  done
}

# wrk_begin NAME SECRET: dir, a fresh folder (the caller's cleanup removes
# it); secret, the Stripe signing secret, exported with the Standard
# Webhooks one as serve reads them.
wrk_begin() {
  dir=$(mktemp -d "${TMPDIR:-/var/tmp}/understudy-$1-XXXXXX")
  secret=$2
  export UNDERSTUDY_STRIPE_SECRET=$secret
  export UNDERSTUDY_STANDARD_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
}

# nginx_start DIR SERVER: nginx in DIR, one worker, daemonised (its pid in
# DIR/nginx.pid), with the server block SERVER.
nginx_start() {
  mkdir -p "$1/nginx"
  cat > "$1/nginx.conf" <<CONF
worker_processes 1; daemon on; pid $1/nginx.pid; error_log $1/nginx/error.log;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $1/nginx; proxy_temp_path $1/nginx;
  fastcgi_temp_path $1/nginx; uwsgi_temp_path $1/nginx; scgi_temp_path $1/nginx;
  $2 }
CONF
  nginx -c "$1/nginx.conf" -e "$1/nginx/error.log"
}

# wait_listening LOG: up to 5 s for a server's "listening" line in LOG.
wait_listening() {
  for _ in $(seq 50); do grep -q listening "$1" && break; sleep 0.1; done
}

# signed_post DIR SECRET: one 1 KiB Stripe callback in $body, signed now
# (valid for the tolerance, 300 s), as wrk's script DIR/post.lua.
signed_post() {
  local pad t sig
  pad=$(head -c 760 /dev/zero | tr '\0' 'x')
  body="{\"id\":\"evt_bench\",\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_bench\",\"amount\":4200,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"order_bench\"},\"description\":\"$pad\"}}}"
  t=$(date +%s)
  sig=$(printf '%s' "$t.$body" | openssl dgst -sha256 -hmac "$2" -hex | sed 's/.* //')
  cat > "$1/post.lua" <<LUA
wrk.method = "POST"
wrk.body = [[$body]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Stripe-Signature"] = "t=$t,v1=$sig"
LUA
}
