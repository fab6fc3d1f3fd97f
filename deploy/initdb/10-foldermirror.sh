#!/bin/sh
# Run by the postgres image once, when it initialises an empty data
# directory: makes foldermirror's role, which is not a superuser, and its
# database, which that role owns. The names and the password are those of
# the replicas' pgpass secret, one line host:port:database:user:password.
set -e
pgpass=${FOLDERMIRROR_PGPASS:-/run/secrets/foldermirror-pgpass}
line=$(grep -v '^#' "$pgpass" | head -n 1)
database=$(printf %s "$line" | cut -d: -f3)
role=$(printf %s "$line" | cut -d: -f4)
password=$(printf %s "$line" | cut -d: -f5-)
case "$database$role$password" in
*\\* | *\** | *:*)
	echo "$pgpass: write one line *:*:DATABASE:USER:PASSWORD, the names and the password without : \\ or *" >&2
	exit 1
	;;
esac
if [ -z "$database" ] || [ -z "$role" ] || [ -z "$password" ]; then
	echo "$pgpass: expected one line *:*:DATABASE:USER:PASSWORD" >&2
	exit 1
fi
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
	-v role="$role" -v database="$database" -v password="$password" <<'SQL'
CREATE ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'password';
CREATE DATABASE :"database" OWNER :"role";
SQL
echo "made the role $role (not a superuser) and its database $database"
