# Sourced by the datasync benchmarks: starts nginx with WebDAV (PUT, DELETE, MKCOL, COPY, MOVE
# and the dav-ext module's PROPFIND) serving $work/root on a free loopback port, logging each
# request's method and sizes to $work/access.log; sets $port and stops nginx (and removes $work)
# on exit. REQUIRES: $work, an empty directory.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/root" "$work/temp"
user=""; [ "$(id -u)" = 0 ] && user="user root;"
cat > "$work/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_http_dav_ext_module.so;
$user
worker_processes 2;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 1024; }
http {
  log_format bytes '\$request_method \$request_length \$bytes_sent';
  access_log $work/access.log bytes;
  client_body_temp_path $work/temp/body;
  server {
    listen 127.0.0.1:$port;
    root $work/root;
    dav_methods PUT DELETE MKCOL COPY MOVE;
    dav_ext_methods PROPFIND OPTIONS;
    create_full_put_path on;
    client_max_body_size 0;
  }
}
CONF
/usr/sbin/nginx -c "$work/nginx.conf" &
nginx_pid=$!
trap 'kill $nginx_pid 2> /dev/null; wait $nginx_pid 2> /dev/null; rm -rf "$work"' EXIT
i=0
while ! python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2> /dev/null; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/error.log" >&2; exit 3; }; sleep 0.05
done
