CREATE TABLE ok_before_error (id int);
THIS IS NOT SQL;
