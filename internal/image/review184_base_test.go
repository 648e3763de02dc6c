package image

import (
	"strings"
	"testing"
)

// The slip check for built-in bases flags no official Docker Hub image
// written bare, with a tag or by digest: each is a base a recipe or a
// Dockerfile may mean.
func TestReview184OfficialBasesNotSlips(t *testing.T) {
	official := strings.Fields(`adminer aerospike almalinux alpine alt amazoncorretto amazonlinux arangodb archlinux bash bonita
buildpack-deps busybox caddy cassandra chronograf cirros clearlinux clickhouse clojure composer couchbase couchdb crate dart
debian docker drupal eclipse-temurin eggdrop elasticsearch elixir emqx erlang fedora flink fluentd gazebo gcc ghost golang
gradle groovy haproxy haskell haxe hello-world hitch httpd hylang ibmjava influxdb irssi jetty joomla jruby julia kibana kong
liquibase logstash mageia mariadb matomo maven memcached mongo monica mono mysql nats neo4j neurodebian nextcloud nginx node
odoo openjdk oraclelinux orientdb percona perl photon php phpmyadmin plone postgres pypy python r-base rabbitmq redis redmine
registry rethinkdb rockylinux ruby rust sapmachine satosa solr sonarqube spiped storm swift swipl teamspeak telegraf tomcat
tomee traefik ubuntu unit varnish vault wordpress xwiki yourls znc zookeeper`)
	for _, n := range official {
		for _, ref := range []string{n, n + ":latest", "docker.io/library/" + n} {
			if err := CheckBaseRef(ref); err != nil {
				t.Errorf("CheckBaseRef(%q): %v", ref, err)
			}
		}
	}
}
